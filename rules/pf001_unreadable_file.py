"""PF001: a file of the job cannot be read."""

from preflight.engine import Example, Rule

_SCRIPT = "import torch\n\nmodel = torch.nn.Linear(1024, 1024).cuda()\n"


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file preflight was given, or that a job names, which cannot be read as text:
    it does not exist, it is binary (contains NUL bytes), it is not valid UTF-8, or it is
    larger than 8 MB. The other files are still checked.

    ## Why is this bad
    Whatever the file decides (a batch size, a ZeRO stage, the model) is unknown, so the
    job's ledger may be incomplete — an unread ZeRO-3 config is the difference between
    16 and 2 bytes of model states per parameter on 8 GPUs; a path given by mistake
    checks nothing at all.

    ## Example
    ```console
    $ preflight check nothere.py
    nothere.py: PF001 cannot read file: No such file or directory
    ```

    ## Use instead
    Give the path of the script, launcher or config the job really uses; save configs as
    UTF-8 text.
    """

    code = "PF001"
    name = "unreadable-file"
    summary = "A file of the job cannot be read (missing, binary, not UTF-8, too large)"
    severity = "error"
    stage = "extract"

    INVALID = [Example(files={"train.py": _SCRIPT, "weights.py": "x = 1\x00\n"},
                       expect=[("PF001", "weights.py", 1)])]
    VALID = [Example(files={"train.py": _SCRIPT})]
