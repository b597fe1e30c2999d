"""PF108: tensor / pipeline parallelism (a case-C remedy) used for a case-A problem."""

from preflight.engine import Example, Rule, gib
from preflight.rules._common import line_of

#: the sharded alternative is worth recommending only if it is not slower than this
SLOWER = 1.1
#: … and only if its parameter gathers stay below this share of its compute time
HIDDEN = 0.25


def titan(tp: int, pp: int = 1, dp_shard: int = -1, batch: int = 2, micro: int = 1) -> str:
    return (
        "[job]\n"
        "dump_folder = \"./outputs\"\n"
        "\n"
        "[model]\n"
        "name = \"llama3\"\n"
        "flavor = \"8B\"\n"
        "\n"
        "[training]\n"
        f"local_batch_size = {batch}\n"
        "seq_len = 4096\n"
        "steps = 1000\n"
        "mixed_precision_param = \"bfloat16\"\n"
        "\n"
        "[optimizer]\n"
        "name = \"AdamW\"\n"
        "lr = 3e-4\n"
        "\n"
        "[parallelism]\n"
        f"data_parallel_shard_degree = {dp_shard}\n"
        f"tensor_parallel_degree = {tp}\n"
        f"pipeline_parallel_degree = {pp}\n"
        f"pipeline_parallel_microbatch_size = {micro}\n"
        "\n"
        "[activation_checkpoint]\n"
        "mode = \"full\"\n"
    )


#: torchtitan names models by flavour; the project tells preflight their shape
PYPROJECT = (
    "[tool.preflight.models]\n"
    "\"llama3:8B\" = { model_type = \"llama\", vocab_size = 128256, hidden_size = 4096, "
    "intermediate_size = 14336, num_hidden_layers = 32, num_attention_heads = 32, "
    "num_key_value_heads = 8, tie_word_embeddings = false }\n"
)

#: GPT-3 175B as Megatron-LM trains it: TP 8 inside each node, PP 16 across 128 nodes
_GPT3_175B = (
    "#!/bin/bash\n"
    "torchrun --nnodes 128 --nproc_per_node 8 pretrain_gpt.py \\\n"
    "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \\\n"
    "    --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \\\n"
    "    --seq-length 2048 --max-position-embeddings 2048 --vocab-size 51200 \\\n"
    "    --micro-batch-size 1 --global-batch-size 1536 --bf16 --use-distributed-optimizer \\\n"
    "    --recompute-granularity full --recompute-method uniform\n")
_MEGATRON_ENTRY = "from megatron.training import pretrain\n\npretrain()\n"

_TP8 = titan(tp=8, dp_shard=1)
_FSDP = titan(tp=1)
_LAUNCH = "torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama3_8b.toml"


class ModelParallelForStates(Rule):
    """
    ## What it does
    Fires when a job uses tensor or pipeline parallelism although sharding the states
    with ZeRO-3 / FSDP over the same GPUs would fit and no single layer or tensor
    approaches the GPU's capacity.

    Communication is weighed as well as memory: the estimator sizes the ZeRO-3
    alternative and predicts its step time; when gathering the parameters over all the
    GPUs would be slower than the job's own tensor / pipeline traffic (a 175B model over
    hundreds of GPUs), model parallelism is the right choice and nothing is reported.

    ## Why is this bad
    Prescriptions get more expensive from case A (states: a config change, ZeRO / FSDP)
    to case C (one layer too large: tensor parallel, a model rewrite). Tensor parallel
    all-reduces activations twice per layer in forward and backward; pipeline parallel
    idles GPUs in its bubble. An 8B model's 128 GB of states over 8 GPUs with FSDP is
    16 GB per GPU — no layer of it needs splitting.

    ## Example
    ```toml
    [parallelism]
    tensor_parallel_degree = 8
    ```

    ## Use instead
    ZeRO-3 / FSDP full shard over the same GPUs (`data_parallel_shard_degree = -1`,
    `tensor_parallel_degree = 1`); keep tensor parallel for layers that do not fit one GPU.
    """

    code = "PF108"
    name = "model-parallel-for-states"
    summary = "Tensor / pipeline parallel (case C) used where sharding the states (case A) suffices"
    severity = "warning"
    misconception = 4
    case = None

    INVALID = [Example(files={"llama3_8b.toml": _TP8, "pyproject.toml": PYPROJECT}, command=_LAUNCH,
                       needs=["params"],
                       expect=[("PF108", "llama3_8b.toml", line_of(_TP8, "tensor_parallel_degree"))])]
    VALID = [Example(files={"llama3_8b.toml": _FSDP, "pyproject.toml": PYPROJECT}, command=_LAUNCH,
                     needs=["params"]),
             # ZeRO-3 over 1,024 GPUs would gather 350 GB of weights every micro-step
             Example(files={"run.sh": _GPT3_175B, "pretrain_gpt.py": _MEGATRON_ENTRY},
                     paths=["run.sh"], needs=["params"])]

    def check(self, ctx):
        tp, pp = ctx.v("tp") or 1, ctx.v("pp") or 1
        if (tp <= 1 and pp <= 1) or not ctx.has_ledger or not ctx.capacity:
            return
        cap, world = ctx.capacity, ctx.world
        if world <= 1:
            return
        # ZeRO-3 over every GPU instead, with no tensor or pipeline split
        zero3 = ctx.what_if("ZeRO-3 over every GPU", tp=1, pp=1, sp=False, zero_stage=3,
                            fsdp=None)
        led = zero3.ledger if zero3 is not None else None
        alt = led.states_bytes if led is not None else None
        if alt is None:
            return
        act = led.bytes_of("activations") or 0
        if led.fits() is False or (led.fits() is None and alt > (ctx.limit or 0)):
            return
        # case C: a single tensor or one layer that needs splitting after all
        if any(ln.bytes and ln.bytes > cap / 4 for ln in led.largest):
            return
        # communication is weighed as well as memory: ZeRO-3 must not be slower —
        # gathering a large model's parameters over hundreds of GPUs each step can cost
        # more than tensor and pipeline parallel's traffic inside the node
        now_s, alt_s = ctx.walls.step_s if ctx.walls else None, zero3.walls.step_s
        speed = ""
        if now_s is None or alt_s is None:
            # a GPU known only by its memory: no step times to weigh. Inside one node the
            # gathers run over the GPUs' own links and memory decides; across nodes it
            # cannot be told, and nothing is said
            if world > (ctx.v("gpus_per_node") or 8):
                return
        else:
            # per token: ZeRO-3 runs `world` replicas where the job runs `dp`, so one of
            # its steps trains world / dp times the tokens
            now_tok, alt_tok = now_s / ctx.dp, alt_s / world
            if alt_tok > now_tok * SLOWER:
                return
            # ZeRO-3 gathers each layer's weights just ahead of its use: a gather volume
            # that is a large share of the compute does not stay hidden at scale
            comm, comp = zero3.walls.comm_s, zero3.walls.compute_s
            if comm is None or not comp or comm > HIDDEN * comp:
                return
            speed = f", and trains {now_tok / alt_tok:.2g}× the tokens per second"
        what = (f"tensor parallel {tp}" if tp > 1 else f"pipeline parallel {pp}")
        yield self.diagnostic(
            f"{what} splits the model (a remedy for a layer too large for one GPU) where "
            f"the problem is at most the model states: ZeRO-3 / FSDP over the same {world} GPUs holds "
            f"{gib(alt)} of states per GPU"
            + (f" and ≈ {gib(act)} of activations" if act else "")
            + f", within {ctx.gpu}'s {gib(cap)}{speed}; no layer needs splitting",
            ctx.src("tp") if tp > 1 else ctx.src("pp"),
            fix="shard with ZeRO-3 / FSDP full shard across the same GPUs and drop tensor / "
                "pipeline parallelism",
            data={"zero3_states_bytes": int(alt)})
