"""PF111: the logits buffer dominates the activations."""

from preflight.engine import Example, Rule, gib, pct
from preflight.physics.liger import DEFAULTS as LIGER_PATCHES
from preflight.rules._common import fused_loss, hf_script, line_of

_BIG = hf_script("Qwen/Qwen2.5-0.5B", mb=8, seq=4096, attn="sdpa")
_SMALL = hf_script("Qwen/Qwen2.5-0.5B", mb=1, accum=8, seq=1024, attn="sdpa")
_LIGER = hf_script("Qwen/Qwen2.5-0.5B", mb=8, seq=4096, attn="sdpa", extra="use_liger_kernel=True")
#: Liger patches no BLOOM: the switch leaves the standard loss and its full logits
_LIGER_BLOOM = hf_script("bigscience/bloom-560m", mb=16, seq=2048, attn="sdpa",
                        extra="use_liger_kernel=True")
_CHUNKED = _BIG.replace("from datasets import load_dataset",
                        "from datasets import load_dataset\n"
                        "from liger_kernel.transformers import apply_liger_kernel_to_qwen2\n"
                        "apply_liger_kernel_to_qwen2()")
_TRL = """\
from datasets import load_dataset
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser

parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
script_args, training_args, model_args = parser.parse_args_and_config()
trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                     train_dataset=load_dataset(script_args.dataset_name)["train"])
trainer.train()
"""
_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-0.5B
dataset_name: trl-lib/Capybara
per_device_train_batch_size: 8
max_length: 4096
output_dir: out
"""
_RECIPE_LIGER = _RECIPE + "use_liger_kernel: true\n"
_TRL_CMD = "accelerate launch --num_processes 8 sft.py --config recipe.yaml"

#: a logits buffer at least this share of capacity, or of the activations, is a finding
CAP_SHARE, ACT_SHARE = 0.20, 0.25


class LogitsDominate(Rule):
    """
    ## What it does
    Sizes the logits buffer — micro-batch × sequence × vocabulary, materialised in fp32
    by most cross-entropy implementations — and fires when it is a large share of the GPU
    or of all activations.

    ## Why is this bad
    Large vocabularies make the output layer's activations the biggest single tensor of
    the step: with Qwen2.5's 151,936-token vocabulary, 8 sequences of 4,096 tokens give
    8 × 4096 × 151936 × 4 B = 19.9 GB of logits, and the loss's gradient doubles it
    transiently — more than all transformer layers of a 0.5B model together.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
    args = TrainingArguments(per_device_train_batch_size=8)   # 4k tokens
    ```

    A job that already uses a fused or chunked loss (`use_liger_kernel=True`, Liger's
    `apply_liger_kernel_to_*`, a chunked cross-entropy such as torchtune's
    `CEWithChunkedOutputLoss`) keeps no full logits and is not reported — unless Liger is
    switched on for a model it does not patch (its `MODEL_TYPE_TO_APPLY_LIGER_FN` has no
    GPT-2, BERT…; or its patch has no fused loss, as Granite's): then the logits are
    materialised as without it, and the finding says the switch changes nothing.

    ## Use instead
    A chunked / fused linear-cross-entropy loss (e.g. Liger Kernel's
    `LigerFusedLinearCrossEntropyLoss`, or `num_logits_to_keep` style chunking) computes
    the loss without materialising the full logits; or lower the micro-batch and raise
    gradient accumulation.
    """

    code = "PF111"
    name = "logits-dominate"
    summary = "The fp32 logits buffer (batch × sequence × vocab) dominates activation memory"
    severity = "warning"
    misconception = None
    case = None

    INVALID = [Example(files={"train.py": _BIG}, command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF111", "train.py", line_of(_BIG, "AutoModelForCausalLM.from_pretrained("))]),
               Example(files={"train.py": _LIGER_BLOOM},
                       command="torchrun --nproc_per_node 8 train.py",
                       expect=[("PF111", "train.py",
                                line_of(_LIGER_BLOOM, "AutoModelForCausalLM.from_pretrained("))]),
               Example(files={"sft.py": _TRL, "recipe.yaml": _RECIPE}, command=_TRL_CMD,
                       expect=[("PF111", "recipe.yaml", 1)])]
    VALID = [Example(files={"train.py": _SMALL}, command="torchrun --nproc_per_node 8 train.py"),
             # a fused linear-cross-entropy keeps no full logits
             Example(files={"train.py": _LIGER}, command="torchrun --nproc_per_node 8 train.py"),
             Example(files={"train.py": _CHUNKED}, command="torchrun --nproc_per_node 8 train.py"),
             # the recipe switches Liger on (TRL / Trainer `use_liger_kernel`)
             Example(files={"sft.py": _TRL, "recipe.yaml": _RECIPE_LIGER}, command=_TRL_CMD)]

    def check(self, ctx):
        v, mb, seq = ctx.v("vocab"), ctx.v("micro_batch"), ctx.v("seq_len")
        if not (v and mb and seq):
            return
        tp = ctx.v("tp") or 1
        logits = mb * seq * v * 4 / tp
        cap, act = ctx.capacity, ctx.activations
        big_for_gpu = bool(cap) and logits >= CAP_SHARE * cap
        big_for_acts = bool(act) and logits >= ACT_SHARE * act and (not cap or logits >= 0.05 * cap)
        if not (big_for_gpu or big_for_acts):
            return
        mt = ctx.v("model_type")
        idle = ctx.v("loss_kernel") == "liger" and bool(mt) and \
            "flce" not in LIGER_PATCHES.get(mt, frozenset())
        if not idle and (ctx.v("loss_kernel") in ("liger", "chunked") or fused_loss(ctx)):
            # a fused / chunked loss computes the loss chunk by chunk: no full logits
            return
        shares = []
        if act:
            shares.append(f"{pct(min(1.0, logits / act))} of activations")
        if cap:
            shares.append(f"{pct(logits / cap)} of {ctx.gpu}")
        yield self.diagnostic(
            f"the logits buffer is {mb} × {seq:,} × {v:,} × 4 B (fp32) = {gib(logits)} per GPU"
            + (f" ({', '.join(shares)})" if shares else "")
            + "; the loss gradient doubles it while it is computed"
            + (f" (Liger is switched on, but its patch has no fused loss for {mt} models)"
               if idle else ""),
            ctx.src("model", "vocab"),
            fix="use a chunked / fused linear-cross-entropy loss that never materialises the "
                "full logits, or lower the micro-batch and raise gradient accumulation",
            data={"logits_bytes": int(logits)})
