"""PF109: one layer or one tensor alone exceeds the GPU (diagnosis case C)."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import hf_script, line_of

_HUGE = hf_script("google/gemma-2-2b", mb=16, seq=8192, attn="sdpa", ckpt=True)
_OK = hf_script("google/gemma-2-2b", mb=1, accum=16, seq=8192, attn="sdpa", ckpt=True)

class SingleTensorExceedsCapacity(Rule):
    """
    ## What it does
    Checks the largest single tensors of one step against the GPU: the embedding /
    output weight (vocab × hidden), a feed-forward weight (hidden × ffn), the logits
    buffer (micro-batch × sequence × vocab, fp32 in most losses) and one layer's
    activations. Any one of them over capacity is case C: no sharding of states and no
    accumulation helps, the tensor itself must be split.

    ## Why is this bad
    With a 256,000-token vocabulary, 16 sequences of 8,192 tokens produce
    16 × 8192 × 256000 × 4 B = 134 GB of fp32 logits — one tensor bigger than an 80 GB
    GPU.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("google/gemma-2-2b")
    args = TrainingArguments(per_device_train_batch_size=16)   # 8k tokens
    ```

    ## Use instead
    Tensor parallel (vocab-parallel embedding and cross-entropy, column-parallel FFN) —
    case C's prescription; for the logits, a chunked / fused cross-entropy avoids the
    tensor entirely, and a smaller micro-batch shrinks it.
    """

    code = "PF109"
    name = "single-tensor-exceeds-capacity"
    summary = "A single weight, the logits or one layer's activations exceed the GPU"
    severity = "error"
    misconception = None
    case = "C"

    INVALID = [Example(files={"train.py": _HUGE}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF109", "train.py", line_of(_HUGE, "AutoModelForCausalLM.from_pretrained("))])]
    VALID = [Example(files={"train.py": _OK}, command="torchrun --nproc_per_node 8 train.py")]

    def check(self, ctx):
        cap, led = ctx.capacity, ctx.ledger
        if not cap or led is None:
            return
        tp = ctx.v("tp") or 1
        # the estimator's largest single tensors (already split by the job's tp)
        cands = []
        for ln in led.largest:
            if not ln.bytes or ("attention scores" in ln.label
                                and ctx.v("attention") != "eager"):
                continue
            anchor = (ctx.src("model", "ffn_hidden") if "MLP" in ln.label
                      else ctx.src("seq_len", "attention") if "attention" in ln.label
                      else ctx.src("model", "vocab"))
            cands.append((ln.label, ln.formula, ln.bytes, anchor))
        act, layers = ctx.activations, ctx.v("layers")
        if act and layers and ctx.v("activation_checkpointing", "none") == "none":
            cands.append(("one layer's activations", f"{gib(act)} / {layers} layers",
                          act / layers, ctx.src("seq_len", "micro_batch")))
        over = [c for c in cands if c[2] > cap]
        if not over:
            return
        what, formula, size, anchor = max(over, key=lambda c: c[2])
        k = 2
        while size * tp / k > ctx.limit and k < 64:
            k *= 2
        fix = (f"tensor parallel over {k} GPUs splits it to {gib(size * tp / k)} per GPU")
        if "logits" in what:
            fix = ("compute the loss in chunks (fused linear cross-entropy) so the full "
                   f"logits never exist, or lower the micro-batch; else {fix}")
        yield self.diagnostic(
            f"{what} alone is {formula} = {gib(size)} per GPU, more than {ctx.capacity_text()}",
            anchor, fix=fix, data={"tensor": what, "bytes": int(size), "capacity_bytes": cap})
