"""PF006: a file the launch line names does not exist."""

from preflight.engine import Example, Rule
from preflight.rules._common import hf_cli_script

_SCRIPT = hf_cli_script("gpt2")
_LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --deepspeed ds_zero2.json --output_dir out\n"
_DS = '{"zero_optimization": {"stage": 2}}\n'


class MissingFile(Rule):
    """
    ## What it does
    Reports a script, config or hostfile that a launch line or a config names but that
    does not exist (relative to where the job runs).

    ## Why is this bad
    The job would fail at start-up; and whatever the file would have set is unknown to
    the estimate — a missing ZeRO-2 config means 16 B/param of states instead of
    4 + 12/8 = 5.5 B/param on 8 GPUs.

    ## Example
    ```bash
    torchrun --nproc_per_node 8 train.py --deepspeed ds_zero2.json   # no ds_zero2.json
    ```

    ## Use instead
    Commit the file, or fix the path.
    """

    code = "PF006"
    name = "missing-file"
    summary = "A script, config or hostfile the job names does not exist"
    severity = "warning"
    stage = "discover"

    INVALID = [Example(files={"train.py": _SCRIPT, "launch.sh": _LAUNCH},
                       expect=[("PF006", "launch.sh", 2)])]
    VALID = [Example(files={"train.py": _SCRIPT, "launch.sh": _LAUNCH, "ds_zero2.json": _DS})]
