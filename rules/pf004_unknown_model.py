"""PF004: the model cannot be sized."""

from preflight.engine import Example, Rule
from preflight.rules._common import hf_script, line_of

_PRIVATE = hf_script("acme/secret-13b")
_PYPROJECT = "[tool.preflight.models]\n\"acme/secret-13b\" = 13_015_864_320\n"


class UnknownModel(Rule):
    """
    ## What it does
    Reports a model the job loads whose size preflight cannot find offline: not a local
    directory with a `config.json`, not in the Hugging Face cache, not in the offline
    catalogue, not a module it can count, not declared in `[tool.preflight.models]`.

    ## Why is this bad
    Without the parameter count the model states — usually the largest part of the
    ledger, 16 B/param under mixed-precision AdamW, 208 GB for a 13B model — are unknown,
    and so is whether the job fits.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("acme/secret-13b")
    ```

    ## Use instead
    Declare it once for the project:
    ```toml
    [tool.preflight.models]
    "acme/secret-13b" = 13_015_864_320     # or a table of config fields with model_type
    ```
    or, for a model on the Hugging Face hub, let preflight read its `config.json` and
    safetensors headers there (`preflight check --hub`, or `hub = true` under
    `[tool.preflight]`; never while `HF_HUB_OFFLINE=1`), kept in the hub's cache for the
    next run.
    """

    code = "PF004"
    name = "unknown-model"
    summary = "The model the job trains cannot be sized offline"
    severity = "warning"
    stage = "models"

    INVALID = [Example(files={"train.py": _PRIVATE},
                       expect=[("PF004", "train.py", line_of(_PRIVATE, "from_pretrained(\"acme"))])]
    VALID = [Example(files={"train.py": _PRIVATE, "pyproject.toml": _PYPROJECT},
                     paths=["train.py"])]
