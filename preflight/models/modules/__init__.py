"""Count the parameters of `nn.Module` classes statically, from their source.

A small evaluator walks a class's `__init__` (and the helper methods it calls) on the
standard library's `ast` tree — the one the Python extractor already parsed — never
importing or running the analysed code. It knows the parameter shapes of the common
`torch.nn` layers, `nn.Parameter(torch.zeros(shape))`, containers (`ModuleList`,
`Sequential`, `ModuleDict`, lists built by comprehensions or `append` loops), nested
user-defined modules, base classes, and weight tying (`self.head.weight = self.wte.weight`:
a tied parameter is counted once). Values come from the config it is given (`config.n_embd`),
dataclass defaults in the same module, `__init__` defaults and module constants.

Whatever it cannot size is reported as an unknown piece with its line, never dropped: the
count is then None.

The package: `values` (what it computes with), `evaluator` (the walk, its concerns in
`scope`, `statements`, `expressions` and `calls`), `layers` (the torch.nn layer table),
`python_builtins` (the builtins it evaluates) and `count` (the entry points exported here).
"""

from preflight.models.modules.count import (build_modules, count_expression, count_modules,
                                            distinct_params, module_classes)
from preflight.models.modules.values import CONFIG, Code, Mod, ModuleLike, Param, Unknown, as_code

__all__ = ["CONFIG", "Code", "Mod", "ModuleLike", "Param", "Unknown", "as_code",
           "build_modules", "count_expression", "count_modules", "distinct_params",
           "module_classes"]
