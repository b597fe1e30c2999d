"""PF401: a DeepSpeed "auto" value that nothing fills in."""

from preflight.engine import Example, Rule

_SCRIPT = ("import deepspeed\nimport torch\n\n"
           "model = torch.nn.Linear(1024, 1024)\n"
           "engine, optimizer, _, _ = deepspeed.initialize(model=model, config=\"ds.json\")\n")
_AUTO = ('{\n  "train_micro_batch_size_per_gpu": "auto",\n'
         '  "zero_optimization": {"stage": 2}\n}\n')
_SET = _AUTO.replace('"auto"', "4")
_LAUNCH = "#!/bin/bash\ndeepspeed --num_gpus 8 train.py\n"


class DeepspeedAutoUnresolved(Rule):
    """
    ## What it does
    Reports a DeepSpeed config value written as `"auto"` in a job where nothing fills it
    in. Only the Hugging Face Trainer (and Accelerate's DeepSpeed plugin) replace `"auto"`
    with its own arguments; a script calling `deepspeed.initialize` itself does not.

    ## Why is this bad
    DeepSpeed refuses to start with an unfilled `"auto"`; and preflight cannot size the
    value it stands for (a micro-batch of 1 or 16 is a 16× difference in activations).

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto"}
    ```
    with `deepspeed.initialize(model=model, config="ds.json")`.

    ## Use instead
    Write the value (`"train_micro_batch_size_per_gpu": 4`), or, for a Trainer job, check
    it with the command that runs it (`preflight check -- deepspeed train.py --deepspeed
    ds.json --per_device_train_batch_size 4 …`).
    """

    code = "PF401"
    name = "deepspeed-auto-unresolved"
    summary = 'A DeepSpeed "auto" value that nothing in the job fills in'
    severity = "warning"
    stage = "assemble"

    INVALID = [Example(files={"train.py": _SCRIPT, "ds.json": _AUTO, "run.sh": _LAUNCH},
                       expect=[("PF401", "ds.json", 2)])]
    VALID = [Example(files={"train.py": _SCRIPT, "ds.json": _SET, "run.sh": _LAUNCH})]
