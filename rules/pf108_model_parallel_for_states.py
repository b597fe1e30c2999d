"""PF108: tensor / pipeline parallelism (a case-C remedy) used for a case-A problem."""

from preflight.engine import Example, Rule, gb, gib
from preflight.rules._common import line_of


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

_TP8 = titan(tp=8, dp_shard=1)
_FSDP = titan(tp=1)
_LAUNCH = "torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama3_8b.toml"


class ModelParallelForStates(Rule):
    """
    ## What it does
    Fires when a job uses tensor or pipeline parallelism although sharding the states
    with ZeRO-3 / FSDP over the same GPUs would fit and no single layer or tensor
    approaches the GPU's capacity.

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
                     needs=["params"])]

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
        what = (f"tensor parallel {tp}" if tp > 1 else f"pipeline parallel {pp}")
        yield self.diagnostic(
            f"{what} splits the model (a remedy for a layer too large for one GPU) where "
            f"the problem is at most the model states: ZeRO-3 / FSDP over the same {world} GPUs holds "
            f"{gb(alt)} of states per GPU"
            + (f" and ≈ {gb(act)} of activations" if act else "")
            + f", within {ctx.gpu}'s {gib(cap)}; no layer needs splitting",
            ctx.src("tp") if tp > 1 else ctx.src("pp"),
            fix="shard with ZeRO-3 / FSDP full shard across the same GPUs and drop tensor / "
                "pipeline parallelism",
            data={"zero3_states_bytes": int(alt)})
