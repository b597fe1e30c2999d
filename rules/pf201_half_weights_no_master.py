"""PF201: 16-bit weights updated by Adam without fp32 master weights."""

from preflight.engine import Example, Rule
from preflight.rules._common import line_of, megatron_job, torch_script

_PURE = torch_script(dtype_line="model = model.to(torch.bfloat16)")
_MIXED = torch_script(autocast="torch.bfloat16")
#: a frozen reference model in bf16 beside an fp32 policy (DPO-style)
_REF = torch_script().replace("optimizer = ", "ref_model = GPT2LMHeadModel.from_pretrained(\"gpt2\").cuda()\n"
                      "ref_model.requires_grad_(False)\n"
                      "ref_model = ref_model.to(torch.bfloat16)\noptimizer = ", 1)

_ADAM = {"adam", "adamw", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "lamb"}
#: unit roundoff: updates smaller than this fraction of a weight are rounded away
_EPS = {"bf16": (8, 2.0 ** -8), "fp16": (11, 2.0 ** -11)}


class HalfWeightsNoMaster(Rule):
    """
    ## What it does
    Fires when the trainable weights are bf16 / fp16 and an Adam-family optimizer
    updates them in place, with no fp32 master copy. Autocast does not make one: HF
    Trainer `bf16=True` over weights loaded in bf16 trains them in bf16; DeepSpeed and
    FSDP `MixedPrecision` keep fp32 masters.

    ## Why is this bad
    bf16 keeps 8 significant bits: a weight of 1.0 can only move in steps of 2⁻⁷, so any
    update smaller than 2⁻⁸ ≈ 0.0039 of the weight rounds to nothing. Adam's update is
    ≈ lr per step — 1e-5 to 1e-4 in fine-tuning, far below that — so most weights stop
    learning while the loss looks plausible. (fp16: 2⁻¹¹ ≈ 0.00049.) Mixed precision
    keeps an fp32 master copy (4 B/param) precisely so these updates accumulate.

    ## Example
    ```python
    model = model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```

    Only the trained weights count: a reference, reward or teacher model kept frozen in
    bf16 beside them (`ref_model.to(torch.bfloat16)`) is never updated and is not reported.

    ## Use instead
    Keep fp32 weights and run the forward under autocast (bf16 mixed precision); or an
    optimizer with stochastic rounding / Kahan-compensated updates for pure-bf16 training.
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(batch).loss
    ```
    """

    code = "PF201"
    name = "half-weights-no-master"
    summary = "16-bit weights updated by Adam without fp32 master weights: small updates are lost"
    severity = "warning"
    misconception = None
    case = None

    INVALID = [Example(files={"train.py": _PURE},
                       expect=[("PF201", "train.py", line_of(_PURE, "torch.bfloat16"))])]
    #: Megatron-LM --bf16 keeps fp32 main parameters in its optimizer
    VALID = [Example(files={"train.py": _MIXED}), Example(files={"train.py": _REF}),
             Example(files=megatron_job("--tensor-model-parallel-size 2"))]

    def check(self, ctx):
        dt, opt = ctx.v("param_dtype"), ctx.v("optimizer")
        if dt not in _EPS or opt not in _ADAM or ctx.v("lora"):
            return
        if ctx.has_ledger:
            # the estimator decides whether the framework keeps fp32 masters (DeepSpeed, FSDP
            # MixedPrecision do; HF Trainer bf16=True over bf16-loaded weights does not)
            if (ctx.part("master") or 0) > 0:
                return
        elif ctx.v("mixed_precision") not in (None, "none"):
            return
        bits, eps = _EPS[dt]
        yield self.diagnostic(
            f"{dt} weights are updated by {opt} without fp32 master weights: {dt} keeps {bits} "
            f"significant bits, so an update smaller than {eps:.2g} of a weight rounds away — "
            f"Adam's per-step update (≈ lr, e.g. 1e-5) is far below that",
            ctx.src("param_dtype"),
            fix="keep fp32 weights and use autocast mixed precision (+4 B/param of master "
                "weights), or an optimizer with stochastic rounding / Kahan summation",
            data={"param_dtype": dt, "optimizer": opt})
