"""PF105: mixed precision switched on, states still over capacity (misconception 3)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import ds_config, hf_cli_launch, hf_cli_script, line_of, state_fix

_SCRIPT = hf_cli_script("meta-llama/Llama-2-7b-hf")
_LAUNCH = hf_cli_launch("torchrun --nproc_per_node 8", "--bf16 True")
_LAUNCH_Z3 = hf_cli_launch("deepspeed --num_gpus 8", "--bf16 True --deepspeed ds_zero3.json")


class MixedPrecisionStates(Rule):
    """
    ## What it does
    Fires when mixed precision (bf16 / fp16 / fp8) is on and the model states still
    exceed the GPU — typically after `--bf16` was added as the fix for an OOM.

    ## Why is this bad
    Mixed precision does not halve memory. Under mixed-precision Adam the weights and
    gradients are 16-bit (2 + 2 B/param) but an fp32 master copy (4) is kept for the
    update, and Adam's m and v stay fp32 (8): 16 B/param, exactly what pure fp32 Adam
    needs (4 + 4 + 8). A 7B model needs 112 GB of states either way. Mixed precision
    saves activation memory and buys tensor-core speed, not state memory.

    ## Example
    ```bash
    torchrun --nproc_per_node 8 train.py --bf16 True   # "bf16 halves the memory"
    ```

    ## Use instead
    Keep bf16 for speed and shard the states: ZeRO-3 / FSDP full shard (112 GB / 8 =
    14 GB per GPU), or an 8-bit optimizer.
    """

    code = "PF105"
    name = "mixed-precision-states"
    summary = "Mixed precision is on but model states still exceed the GPU (16 B/param either way)"
    severity = "warning"
    misconception = 3
    case = "A"

    INVALID = [Example(files={"train.py": _SCRIPT, "launch.sh": _LAUNCH}, paths=["launch.sh"],
                       expect=[("PF105", "launch.sh", line_of(_LAUNCH, "--bf16"))])]
    VALID = [Example(files={"train.py": _SCRIPT, "launch.sh": _LAUNCH_Z3,
                            "ds_zero3.json": ds_config(3)}, paths=["launch.sh"])]

    def check(self, ctx):
        st, cap, mp = ctx.states, ctx.capacity, ctx.v("mixed_precision")
        if st is None or not cap or st <= cap or mp not in ("bf16", "fp16", "fp8"):
            return
        bpp = ctx.bytes_per_param()
        per = f" ({bpp:.0f} B/param)" if bpp else ""
        master = ctx.part("master")
        n = ctx.v("params") or ctx.n
        w_bpp = (ctx.part("params") or 0) * ctx.split / n if n and not ctx.is_sharded() else None
        if master:
            why = (f"16-bit params and grads save 4 B/param and the fp32 master weights "
                   f"({gib(master)}) take it back")
        elif w_bpp is not None and w_bpp >= 4:
            why = ("autocast computes in 16 bits but the weights, gradients and Adam's m, v "
                   "stay fp32")
        else:
            why = "16-bit params and grads save 4 B/param and fp32 master weights take it back"
        yield self.diagnostic(
            f"{mp} mixed precision is on, yet model states still need {gib(st)} per GPU{per}: "
            f"{why} — mixed precision shrinks activations, not states; {ctx.capacity_text()}",
            ctx.src("mixed_precision"), fix=state_fix(ctx),
            data={"states_bytes": st, "capacity_bytes": cap})
