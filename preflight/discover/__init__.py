"""Discovery: the given paths (and an optional launch command) grouped into jobs.

A job is an entry (a training script, or a recipe for recipe-driven CLIs) plus the launcher
line that runs it and the config files that feed it. The modules:

- `jobs`: `discover`, the grouping of the given (or walked) files into jobs;
- `index`: the repository-wide search for the launchers and configs that name a file;
- `specs`: a launch line's invocation → a job spec, the configs it names followed on;
- `declared`: the jobs declared in `[[tool.preflight.jobs]]`;
- `command`: a launch command given after `--` → an invocation;
- `signals`: the cheap text tests of a file (runnable? training? which imports?);
- `walk_tests`: the walked files' tests, asked over two processes;
- `paths`: resolving a file named on a launch line, relative and absolute paths.

Nothing is imported here: `preflight.ahead` defers `walk_tests` (`lazy`), which imports
this package at once.
"""
