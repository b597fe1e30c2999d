"""PF202: fp16 training without loss scaling."""

import re

from preflight.engine import Example, Rule
from preflight.rules._common import line_of, torch_script

_BARE = torch_script(autocast="torch.float16")
_SCALED = torch_script(autocast="torch.float16", scaler=True)

#: a loss scaler in the job's code, or a framework that scales fp16 losses itself
_SCALING = re.compile(r"GradScaler|loss_scale|scaler\.scale|\bTrainer\s*\(|Accelerator\s*\(|"
                      r"deepspeed\.initialize|lightning|SFTTrainer|\.backward\(\s*loss")
_MANUAL_FP16 = re.compile(r"float16|\.half\(\)")


class Fp16WithoutLossScaling(Rule):
    """
    ## What it does
    Fires when a hand-written loop trains in fp16 (`autocast(dtype=torch.float16)`,
    `.half()`) and nothing scales the loss: no `torch.amp.GradScaler`, no framework
    (Trainer, Accelerate, DeepSpeed, Lightning) that does it for you.

    ## Why is this bad
    fp16 has 5 exponent bits: its smallest normal value is 6.1e-5 and the smallest
    subnormal 6.0e-8. Many activation gradients are smaller than that and flush to zero
    in backward, silently stalling training. Loss scaling multiplies the loss (e.g. by
    65,536) before backward and unscales the gradients before the step.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(batch).loss
    loss.backward()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()
    ```
    or train in bf16, which has fp32's exponent range and needs no scaling.
    """

    code = "PF202"
    name = "fp16-without-loss-scaling"
    summary = "fp16 training without loss scaling: small gradients underflow to zero"
    severity = "warning"
    misconception = None
    case = None

    INVALID = [Example(files={"train.py": _BARE},
                       expect=[("PF202", "train.py", line_of(_BARE, "torch.autocast"))])]
    VALID = [Example(files={"train.py": _SCALED})]

    def check(self, ctx):
        fp16 = ctx.v("mixed_precision") == "fp16" or ctx.v("param_dtype") == "fp16"
        if not fp16:
            return
        texts = list(ctx.texts())
        if not texts or not any(_MANUAL_FP16.search(t) for _, t in texts):
            return
        if any(_SCALING.search(t) for _, t in texts):
            return
        yield self.diagnostic(
            "fp16 without loss scaling: fp16's smallest normal value is 6.1e-5 (subnormal "
            "6.0e-8), so small gradients flush to zero in backward",
            ctx.src("mixed_precision", "param_dtype"),
            fix="scale the loss with torch.amp.GradScaler (scaler.scale(loss).backward(); "
                "scaler.step(opt); scaler.update()), or train in bf16")
