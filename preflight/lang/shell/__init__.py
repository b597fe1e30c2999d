"""The shell language of launch scripts (`.sh`, sbatch scripts, Makefile recipes), read
without running them.

The reader is a small evaluator of our own on top of a quote-aware word splitter, not
bashlex: bashlex only builds a syntax tree (it evaluates nothing, so `$((N*8))`,
`${VAR:-default}` and `"${ARGS[@]}"` would still need an evaluator of ours) and it rejects
bash arrays and several constructs common in launch scripts. What a launcher needs is
narrow — variables, `export`, arithmetic, default expansions, continuations, arrays,
`source` — and a hand-written evaluator says *why* a value is unknown, which a parse tree
does not. A condition it can decide takes its branch; an undecidable one reads each branch
from the same variables, and what they set differently is unknown, with the values it may
hold. Reading is linear in the script's length, within the budgets of `budgets`.

Modules, one idea each:
- `values`   — an expanded word and the marker an unknown piece leaves in it
- `words`    — quote-aware splitting of one logical line into words
- `expand`   — what `$NAME`, `${…}`, `$(…)` and `$((…))` expand to
- `arith`    — `$(( … ))` with bash's own integer semantics
- `lines`    — logical lines (continuations, multi-line arrays) and where a flag is written
- `control`  — `if` / `case` / loops: which branch is read, how branches merge
- `reader`   — the reader's state and the walk over a script's lines and commands
- `sources`  — here-documents and `source`d files
- `blocks`   — function bodies (read at each call) and `for` loops read once per value
- `budgets`  — the reader's budgets, in one place
- `examples` — what the language reads, as small launch scripts and their facts (tests)

The language knows no launcher: what a command line launches is recognised by
`preflight.extract.launchers`, through the hooks of `reader.State`.
"""
