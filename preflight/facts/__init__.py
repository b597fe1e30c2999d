"""The vocabulary every stage speaks, owned here and nowhere else.

    names      the fact names (`FactName`), one spec per fact, value validation
    spellings  every framework's spelling of an optimizer, precision, FSDP strategy, dtype,
               attention implementation → the vocabulary
    layout     world size, data-parallel degree, effective ZeRO stage and shard degree,
               computed once from a plan

`Fact`, `TrainingPlan` and `merge` (preflight.plan) are built on these.
"""

from preflight.facts.layout import Layout
from preflight.facts.names import (ENUMS, FACT_NAMES, INT_FACTS, SPECS, FactName, FactSpec,
                                   UnknownFactName, check_value, fact_name, read_value, spec)

__all__ = ["ENUMS", "FACT_NAMES", "INT_FACTS", "SPECS", "FactName", "FactSpec", "Layout",
           "UnknownFactName", "check_value", "fact_name", "read_value", "spec"]
