"""PF103: code that sizes training memory as numel() × 4 bytes (misconception 1)."""

import re

from preflight.engine import Example, Rule, Source
from preflight.rules._common import line_of

_BAD = '''import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2")
n_bytes = sum(p.numel() for p in model.parameters()) * 4
if n_bytes > torch.cuda.get_device_properties(0).total_memory * 0.9:
    raise SystemExit("model does not fit")
'''
_BAD_INLINE = '''import torch

def fits(model, budget):
    need = 4 * sum(p.numel() for p in model.parameters())  # fp32 weights
    return need < budget
'''
_GOOD = '''import torch

def training_bytes(model):
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return n * 16   # mixed-precision AdamW: 2 + 2 + 4 master + 8 Adam moments
'''

# `numel()` and a literal 4 multiplied on the same line: `x.numel() * 4`, `4 * numel()`,
# `sum(p.numel() …) * 4`. `element_size()` (the tensor's real width) is not flagged.
_TIMES4 = re.compile(r"(?:\*\s*4(?:\.0*)?\b(?!\s*\*)(?!\.\d))|(?:(?<![\w.])4(?:\.0*)?\s*\*(?!\*))")


def _code_part(line: str) -> str:
    """The line up to a comment, with string contents blanked (same columns)."""
    out, quote = [], None
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
                out.append(ch)
            else:
                out.append(" ")
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join(out)


class NumelTimesFour(Rule):
    """
    ## What it does
    Finds code that sizes a model's memory as `numel() * 4` — parameters × 4 bytes — in the
    job's Python files.

    ## Why is this bad
    Parameters × 4 bytes is the size of fp32 weights, not of training. Mixed-precision
    AdamW holds 16 B/param of model states (2 + 2 + 4 master + 8 for m and v), four times
    the estimate, before any activation: a check that a 7B model "needs 28 GB" passes on
    an 80 GB card that the job's 112 GB of states will overflow.

    ## Example
    ```python
    n_bytes = sum(p.numel() for p in model.parameters()) * 4
    ```

    ## Use instead
    Count 16 B per trainable parameter for mixed-precision Adam (10 with an 8-bit
    optimizer, 4–8 for SGD), plus activations — or run `preflight estimate` for the full
    ledger.
    ```python
    n_bytes = sum(p.numel() for p in model.parameters() if p.requires_grad) * 16
    ```
    """

    code = "PF103"
    name = "numel-times-four"
    summary = "Memory sized as numel() × 4 bytes: training states are 16 B/param under AdamW"
    severity = "warning"
    misconception = 1
    case = None

    INVALID = [
        Example(files={"fit_check.py": _BAD},
                expect=[("PF103", "fit_check.py", line_of(_BAD, "* 4"))]),
        Example(files={"util.py": _BAD_INLINE},
                expect=[("PF103", "util.py", line_of(_BAD_INLINE, "4 * sum"))]),
    ]
    VALID = [Example(files={"util.py": _GOOD})]

    def check(self, ctx):
        fix = ("count 16 B per trainable parameter for AdamW (10 with an 8-bit optimizer) "
               "plus activations, or use `preflight estimate`")
        # the extractor found the multiplications on the syntax tree it already had
        found = {e.path: e.extras.get("numel_times_four") for e in
                 (ctx.job.extractions if ctx.job else []) if e.kind == "python"}
        message = None
        for path, text in ctx.texts():
            if "numel" not in text:
                continue
            hits = found.get(path)
            if hits is None:        # a file the extractor did not parse: the one-line pattern
                hits = _text_hits(text)
            for line, col in sorted(set(hits)):
                if message is None:     # the job's states are sized only for a finding
                    bpp = ctx.bytes_per_param()
                    job = f"; this job holds {bpp:.0f} B/param of model states" if bpp else ""
                    message = ("memory sized as parameters × 4 bytes (`numel() * 4`): that is "
                               "fp32 weights only — mixed-precision AdamW training holds 16 "
                               f"B/param (2 params + 2 grads + 4 master + 8 Adam m, v){job}")
                yield self.diagnostic(message, Source(path=path, line=line, col=col), fix=fix)


def _text_hits(text: str) -> list[tuple[int, int]]:
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        if "numel" not in raw:
            continue
        line = _code_part(raw)
        if "numel(" in line and _TIMES4.search(line):
            out.append((i, line.index("numel(") + 1))
    return out
