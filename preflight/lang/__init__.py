"""The configuration languages preflight reads statically, one module or package each.

`python` is the static evaluator of Python scripts, `shell` the reader of shell launchers
(words, expansions, arithmetic, control flow, here-documents, `source`d files), `bounded`
the arithmetic and formatting with budgets that the evaluators compute through,
`positions` the line and column of every key of a JSON / YAML / TOML document, `pyconfig`
the Python config files of mmengine / detectron2 read as documents, `lexicon` the knob
names of any framework for documents no adapter claims, `hydra` Hydra / OmegaConf
composition (defaults lists, overrides, `${…}` interpolation), `includes` documents built
from others (`_base_`, `extends`, `!include`), `overrides` the `key=value` words of Hydra
apps and recipe CLIs. Nothing here runs
a job's code or knows a framework: the framework adapters (`preflight.frameworks`) and the
extractors (`preflight.extract`) sit above and say which keys and calls mean which fact.
"""
