"""Training-API patterns: which calls, keywords and names in a script become which facts.

The evaluator (`preflight.lang.python`) hands every call it can name to `Patterns.on_call`
with the evaluated arguments; this package maps them to the facts of docs/facts.md
(spellings from preflight.facts.spellings) and collects the model references for the
model-resolution stage.

One module per family of facts — `environment` (environment, platform, paths, argparse),
`optimizers`, `precision`, `parallel`, `data` (batch, sequence), `models` (model
references), `vocab` (resized embeddings), `checkpointing`, `attention`, `kernels`
(Liger-Kernel's patches), `fallbacks` (the end of a file) — and `arguments` (the library argument dataclasses the evaluator fills);
`collector` holds `Patterns` and the order calls are offered in. A framework's own idioms
(TrainingArguments and the Trainer, TRL, peft, Lightning, accelerate, DeepSpeed, …) are read
by the script hooks of its adapter in preflight.frameworks.
"""

from preflight.extract.py_patterns.arguments import LIB_DATACLASSES, LIB_FIELD_TYPES, library_defaults
from preflight.extract.py_patterns.collector import Patterns

__all__ = ["LIB_DATACLASSES", "LIB_FIELD_TYPES", "Patterns", "library_defaults"]
