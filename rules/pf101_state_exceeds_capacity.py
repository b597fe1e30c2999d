"""PF101: model states alone exceed the GPU (diagnosis case A)."""

from preflight.engine import Example, Rule
from preflight.rules._common import (ds_config, hf_cli_launch, hf_cli_script, hf_script, line_of,
                                     state_fix, states_text)

_OOM = hf_script("meta-llama/Llama-2-7b-hf", mb=4)
_FIXED = hf_cli_script("meta-llama/Llama-2-7b-hf")
_FIXED_LAUNCH = hf_cli_launch("deepspeed --num_gpus 8", "--bf16 True --deepspeed ds_zero3.json")


class StateExceedsCapacity(Rule):
    """
    ## What it does
    Compares the per-GPU model states — parameters, gradients, optimizer state and fp32
    master weights, after the job's sharding — with the GPU's usable memory.

    ## Why is this bad
    Model states are resident for the whole run and do not depend on the batch: if they
    exceed the card the job dies at load or at the first `optimizer.step()`, whatever the
    batch size. Mixed-precision AdamW holds 16 bytes per trainable parameter (2 params +
    2 grads + 4 master + 8 for Adam's m and v), so a 7B full fine-tune needs
    16 × 7e9 B = 104.3 GiB on every GPU under plain DDP — more than an H100-80GB's
    79.6 GiB before a single activation.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    args = TrainingArguments(bf16=True, optim="adamw_torch")   # DDP on 8 × H100-80GB
    ```

    ## Use instead
    Shard the states first (case A's prescription, docs/ledger.md): ZeRO-2/3 or FSDP over
    the data-parallel GPUs (ZeRO-3 over 8 GPUs: 104.3 / 8 = 13.0 GiB per GPU); then an 8-bit
    optimizer (10 B/param); then optimizer offload or more GPUs.
    ```python
    args = TrainingArguments(bf16=True, optim="adamw_torch", deepspeed="ds_zero3.json")
    ```
    """

    code = "PF101"
    name = "state-exceeds-capacity"
    summary = "Model states (params, grads, optimizer, master weights) alone exceed the GPU"
    severity = "error"
    misconception = None
    case = "A"

    INVALID = [Example(files={"train.py": _OOM}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF101", "train.py", line_of(_OOM, "optim="))])]
    VALID = [Example(files={"train.py": _FIXED, "launch.sh": _FIXED_LAUNCH,
                            "ds_zero3.json": ds_config(3)}, paths=["launch.sh"])]

    def check(self, ctx):
        st, cap = ctx.states, ctx.capacity
        if st is None or not cap or st <= cap:
            return
        bpp = ctx.bytes_per_param()
        yield self.diagnostic(
            f"model states need {states_text(ctx)}; {ctx.capacity_text()}",
            ctx.src("optimizer", "model", "params"), fix=state_fix(ctx),
            data={"states_bytes": st, "capacity_bytes": cap, "bytes_per_param": bpp})
