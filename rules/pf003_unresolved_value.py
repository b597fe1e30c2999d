"""PF003: a value the job needs is only known when it runs."""

from preflight.engine import Example, Rule
from preflight.rules._common import line_of

_ENV = ("import os\n\n"
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n\n"
        "model = AutoModelForCausalLM.from_pretrained(\"gpt2\")\n"
        "args = TrainingArguments(output_dir=\"out\", bf16=True,\n"
        "                         per_device_train_batch_size=int(os.environ[\"BS\"]))\n"
        "Trainer(model=model, args=args).train()\n")
_FIXED = _ENV.replace("int(os.environ[\"BS\"])", "8")


class UnresolvedValue(Rule):
    """
    ## What it does
    Reports a value that decides memory or scaling (a batch size, a sequence length, a
    GPU name, a script path) but cannot be known without running the job: an environment
    variable without a default, a command-line argument never given, a value computed at
    run time. The finding says what it depends on.

    ## Why is this bad
    preflight never guesses: the ledger lines that need the value are unknown, so the
    job cannot be called fitting or not — a micro-batch of 1 or of 16 is a 16× difference
    in activation memory.

    ## Example
    ```python
    args = TrainingArguments(per_device_train_batch_size=int(os.environ["BS"]))
    ```

    ## Use instead
    Write the value, or check the job with the command that launches it
    (`preflight check -- BS=8 torchrun … train.py`), so the value is known.
    """

    code = "PF003"
    name = "unresolved-value"
    summary = "A value the estimate needs is only known at run time"
    severity = "warning"
    stage = "extract"

    INVALID = [Example(files={"train.py": _ENV},
                       expect=[("PF003", "train.py", line_of(_ENV, "os.environ["))])]
    VALID = [Example(files={"train.py": _FIXED})]
