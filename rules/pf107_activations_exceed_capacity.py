"""PF107: states fit, activations do not (diagnosis case B)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import activation_fix, hf_script, line_of

_LONG = hf_script("facebook/opt-1.3b", mb=4, seq=16384, attn="sdpa")
_CKPT = hf_script("facebook/opt-1.3b", mb=1, accum=4, seq=16384, attn="sdpa", ckpt=True)


class ActivationsExceedCapacity(Rule):
    """
    ## What it does
    Fires when the model states fit on the GPU but states plus activations (for the
    configured micro-batch × sequence) exceed it — the job will OOM in backward.

    ## Why is this bad
    Activations are linear in tokens per micro-batch and in layers (≈ 34·s·b·h bytes
    per layer for a GPT block, plus 5·a·s²·b for eager attention). For L=32, h=4096,
    b=4, s=2048 that is ≈ 34 GiB; at s=8192 and b=16 it is 16× more. No amount of model
    sharding helps: ZeRO and FSDP shard states, not activations.

    ## Example
    ```python
    max_seq_length = 16384
    args = TrainingArguments(per_device_train_batch_size=4)
    ```

    ## Use instead
    In the order of docs/ledger.md (case B): a smaller micro-batch with gradient accumulation to
    keep the global batch; activation checkpointing (`gradient_checkpointing=True`,
    keeps ≈ 2·s·b·h per layer); sequence / context parallelism for long sequences.
    """

    code = "PF107"
    name = "activations-exceed-capacity"
    summary = "Model states fit but activations push the peak over the GPU"
    severity = "error"
    misconception = None
    case = "B"

    INVALID = [Example(files={"train.py": _LONG}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF107", "train.py", line_of(_LONG, "max_seq_length ="))])]
    VALID = [Example(files={"train.py": _CKPT}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        # the activations alive at the peak's phase, not every activation line added up
        st, act, peak, cap = ctx.states, ctx.activations_at_peak, ctx.peak, ctx.capacity
        if st is None or act is None or peak is None or not cap or st > cap or peak <= cap:
            return
        mb, seq = ctx.v("micro_batch"), ctx.v("seq_len")
        anchor = (ctx.src("seq_len", "micro_batch") if (seq or 0) >= 8192 or mb == 1
                  else ctx.src("micro_batch", "seq_len"))
        shape = f" for micro-batch {mb or '?'} × sequence {seq or '?'}"
        fix = activation_fix(ctx)
        yield self.diagnostic(
            f"model states fit ({gib(st)} per GPU) but activations need {gib(act)}{shape} "
            f"at the peak ({ctx.peak_phase or 'step'}): the predicted peak of {gib(peak)} "
            f"exceeds {ctx.gpu}'s {(cap / 2**30):.1f} GiB", anchor, fix=fix,
            data={"states_bytes": st, "activations_bytes": act, "peak_bytes": peak,
                  "peak_phase": ctx.peak_phase, "capacity_bytes": cap})
