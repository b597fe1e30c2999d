"""PF102: the weights alone fit, the training states do not (misconception 1)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import breakdown, hf_script, line_of, state_fix

_OOM = hf_script("meta-llama/Llama-2-7b-hf", mb=4)
_SMALL = hf_script("Qwen/Qwen2.5-1.5B", mb=4)


class WeightsFitStatesDoNot(Rule):
    """
    ## What it does
    Fires when the model's weights fit on the GPU but its training states do not: the
    configuration someone sizes as "parameters × 4 bytes" (or × 2 in bf16) and launches.

    ## Why is this bad
    Memory is not parameters × 4 bytes. Training with mixed-precision Adam keeps
    16 B/param of model states: bf16 weights (2) and gradients (2), an fp32 master copy
    (4) and Adam's m and v (8). A 7B model's bf16 weights are 14 GB and fit an 80 GB card
    with room to spare; its training states are 112 GB and do not.

    ## Example
    ```python
    # "7B × 2 bytes = 14 GB, fits an 80 GB GPU easily"
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    ```

    ## Use instead
    Size training memory with the full ledger (`preflight estimate`), then apply the
    case-A prescription: ZeRO / FSDP sharding, then an 8-bit optimizer.
    """

    code = "PF102"
    name = "weights-fit-states-do-not"
    summary = "The weights fit but the training states do not (memory ≠ params × 4 bytes)"
    severity = "warning"
    misconception = 1
    case = "A"

    INVALID = [Example(files={"train.py": _OOM}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF102", "train.py", line_of(_OOM, "AutoModelForCausalLM.from_pretrained("))])]
    VALID = [Example(files={"train.py": _SMALL}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        st, cap, w = ctx.states, ctx.capacity, ctx.part("params")
        if st is None or not cap or st <= cap or not w or w > cap or ctx.partly_frozen():
            return
        n = ctx.v("params") or ctx.n
        per_w = f" ({w / n:.0f} B/param)" if n and not ctx.is_sharded() else ""
        bpp = ctx.bytes_per_param()
        yield self.diagnostic(
            f"the weights alone are {gib(w)} per GPU{per_w} and fit, but training holds "
            f"{gib(st)} of model states per GPU"
            + (f" ({bpp:.0f} B/param: {breakdown(ctx)})" if bpp else "")
            + f"; {ctx.capacity_text()} — memory is not parameters × 4 bytes",
            ctx.src("model", "params"), fix=state_fix(ctx),
            data={"weights_bytes": w, "states_bytes": st, "capacity_bytes": cap})
