"""PF005: a config file does not parse or holds a value of the wrong kind."""

from preflight.engine import Example, Rule

_SCRIPT = ("import deepspeed\nimport torch\n\n"
           "model = torch.nn.Linear(1024, 1024)\n"
           "engine, optimizer, _, _ = deepspeed.initialize(model=model, config=\"ds.json\")\n")
_BROKEN = '{"train_micro_batch_size_per_gpu": 4,\n "zero_optimization": {"stage": 2,}\n}\n'
_FIXED = '{"train_micro_batch_size_per_gpu": 4,\n "zero_optimization": {"stage": 2}\n}\n'


class MalformedConfig(Rule):
    """
    ## What it does
    Reports a JSON, YAML or TOML file of the job (or `[tool.preflight]` itself) that does
    not parse, or a setting of the wrong kind, at the position the parser stopped.

    ## Why is this bad
    Every setting in the file is unknown to preflight — a ZeRO-3 config that does not
    parse leaves 16 B/param of states where 2 B/param was meant on 8 GPUs — and the
    framework that reads it will refuse to start.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2,}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2}}
    ```
    """

    code = "PF005"
    name = "malformed-config"
    summary = "A config file does not parse or holds a value of the wrong kind"
    severity = "error"
    stage = "extract"

    INVALID = [Example(files={"train.py": _SCRIPT, "ds.json": _BROKEN},
                       expect=[("PF005", "ds.json", 2)])]
    VALID = [Example(files={"train.py": _SCRIPT, "ds.json": _FIXED})]
