"""PF002: a Python file of the job does not parse."""

from preflight.engine import Example, Rule
from preflight.rules._common import line_of

_BROKEN = ("import torch\n\n"
           "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4\n"
           "for step in range(10):\n"
           "    optimizer.step()\n")
_FIXED = _BROKEN.replace("lr=1e-4\n", "lr=1e-4)\n")


class SyntaxError_(Rule):
    """
    ## What it does
    Reports a Python file of the job that cannot be parsed, at the line and column where
    parsing stopped.

    ## Why is this bad
    Nothing in the file can be read: its optimizer, batch size, precision and model stay
    unknown (one missing parenthesis hides every fact of a 1,000-line script), and the job
    would fail at start-up anyway, after its wait in the queue.

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4
    ```

    ## Use instead
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ```
    """

    code = "PF002"
    name = "syntax-error"
    summary = "A Python file of the job does not parse"
    severity = "error"
    stage = "extract"

    INVALID = [Example(files={"train.py": _BROKEN},
                       expect=[("PF002", "train.py", line_of(_BROKEN, "AdamW"))])]
    VALID = [Example(files={"train.py": _FIXED})]
