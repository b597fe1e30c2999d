"""The fact names of the JSON contract and one spec per fact: its kind, its range or its
allowed values, and what it means.

Every stage names facts through `FactName` (a `str` enum, so `FactName.MICRO_BATCH ==
"micro_batch"` and JSON keys stay plain strings). `check_value` is the one validation of a
value: `merge` applies it to every candidate, and the estimator to plans built by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional


class FactName(str, Enum):
    """Every fact name, in the JSON output's order (docs/design.md)."""

    MODEL = "model"
    PARAMS = "params"
    TRAINABLE_PARAMS = "trainable_params"
    LAYERS = "layers"
    HIDDEN = "hidden"
    HEADS = "heads"
    KV_HEADS = "kv_heads"
    FFN_HIDDEN = "ffn_hidden"
    VOCAB = "vocab"
    PARAM_DTYPE = "param_dtype"
    MIXED_PRECISION = "mixed_precision"
    OPTIMIZER = "optimizer"
    MICRO_BATCH = "micro_batch"
    SEQ_LEN = "seq_len"
    GRAD_ACCUM = "grad_accum"
    NODES = "nodes"
    GPUS_PER_NODE = "gpus_per_node"
    WORLD_SIZE = "world_size"
    ZERO_STAGE = "zero_stage"
    FSDP = "fsdp"
    OFFLOAD = "offload"
    TP = "tp"
    PP = "pp"
    SP = "sp"
    ACTIVATION_CHECKPOINTING = "activation_checkpointing"
    ATTENTION = "attention"
    LORA = "lora"
    GPU = "gpu"
    #: the architecture family the activation model uses ("gpt2" | "llama"); set by model
    #: resolution from a config's `model_type` or the catalogue, never from a name's words
    FAMILY = "family"
    #: the transformers `model_type` of the resolved architecture ("gpt2", "llama"…): what
    #: its modules keep (gpt2's gelu_new and K/V cache copies) follows from it
    MODEL_TYPE = "model_type"
    #: what the model and the loop keep alive (the ledger's phases and saved tensors)
    MASTER_WEIGHTS = "master_weights"
    DROPOUT = "dropout"
    LORA_DROPOUT = "lora_dropout"
    LORA_ADAPTER_DTYPE = "lora_adapter_dtype"
    #: the device torch.autocast runs on: its op lists differ (CPU autocast keeps `pow` in
    #: 16 bits, CUDA's runs it in fp32), and with them what gelu_new saves
    AUTOCAST_DEVICE = "autocast_device"
    USE_CACHE = "use_cache"
    ZERO_GRAD_SET_TO_NONE = "zero_grad_set_to_none"
    #: the parameter tensors the optimizer steps, counted on the live model by a training
    #: callback (torch's Adam keeps a `step` tensor for each); not in the static contract
    TRAINABLE_TENSORS = "trainable_tensors"
    #: a DeepSpeed config's ZeRO buffer settings as written (reduce_bucket_size,
    #: allgather_bucket_size, stage3_prefetch_bucket_size, stage3_max_live_parameters,
    #: contiguous_gradients, overlap_comm, sub_group_size); preflight.physics.zero reads them
    ZERO_BUFFERS = "zero_buffers"
    #: mixture of experts: routed experts per MoE layer, experts each token is sent to
    #: (top-k), one expert's MLP width, the shared experts' width, the parameters one token
    #: uses, the MoE layers and what the router keeps
    EXPERTS = "experts"
    EXPERTS_PER_TOKEN = "experts_per_token"
    EXPERT_FFN_HIDDEN = "expert_ffn_hidden"
    SHARED_EXPERT_FFN_HIDDEN = "shared_expert_ffn_hidden"
    ACTIVE_PARAMS = "active_params"
    MOE_LAYERS = "moe_layers"
    MOE_ROUTER = "moe_router"
    #: expert parallelism: the ranks each MoE layer's routed experts are spread over, and
    #: the parameters of those experts (all layers, all experts: what the ranks split)
    EXPERT_PARALLEL = "expert_parallel"
    EXPERT_PARAMS = "expert_params"
    #: a custom module's layers as its forward applies them, with what each saves per
    #: sample (models.forward), read from the class and the shape of the input it is given
    LAYER_STACK = "layer_stack"
    #: the model's tensors by shape, from its architecture: the trainable parameter tensors
    #: (what torch.optim keeps per tensor) and the registered buffers
    MODEL_TENSORS = "model_tensors"
    #: a catalogue model's parameter tensors with the parameter count they belong to, or
    #: why they are not known (models.param_tensors): the estimator counts torch.optim's
    #: per-tensor `step` state with them when the plan's params are the catalogue's
    CATALOGUE_TENSORS = "catalogue_tensors"
    #: where the model and its optimizer live ("cuda", "cpu"): torch.optim keeps its `step`
    #: counts on the host unless fused/capturable, so on a CPU run they are device memory
    DEVICE = "device"
    #: the model was cast as a whole (`model.to(dtype)`, `.half()`, `.bfloat16()`): its
    #: floating-point buffers are cast with the weights
    MODEL_CAST = "model_cast"
    #: the optimizer was built with fused=True or capturable=True: its `step` counts live on
    #: the parameters' device
    OPTIMIZER_FUSED = "optimizer_fused"
    #: the loss's kernel: "standard" (fp32 logits and gradients), "chunked" (litgpt's
    #: lm_head chunks and per-chunk cross-entropy in the compute dtype) or "liger"
    #: (Liger-Kernel switched on: its fused linear cross-entropy, physics.liger)
    LOSS_KERNEL = "loss_kernel"
    #: what a job says of Liger-Kernel beyond the switch: the layer kernels it applies
    #: ("layers": rms_norm, swiglu, geglu, rope) and the release it installs ("release")
    LIGER = "liger"
    #: how CUDA loads the kernels of its libraries: "lazy" (CUDA ≥ 11.7, torch's default)
    #: or "eager" (every kernel at start: a larger context)
    CUDA_MODULE_LOADING = "cuda_module_loading"
    #: the caching allocator runs with `expandable_segments:True` (PYTORCH_CUDA_ALLOC_CONF):
    #: segments grow by pages, so the reserved memory keeps no fresh segment beside freed ones
    EXPANDABLE_SEGMENTS = "expandable_segments"
    #: state tensors per parameter, each the parameter's size, of an optimizer the
    #: vocabulary has no state model for (`other`: a repository's own optimizer class)
    OPTIMIZER_STATES = "optimizer_states"
    #: DeepSeek's multi-head latent attention: its config fields (kv_lora_rank, q_lora_rank,
    #: qk_nope_head_dim, qk_rope_head_dim, v_head_dim; physics.mla)
    LATENT_ATTENTION = "latent_attention"
    #: a DeepSeek-style router: fp32 upcast, a group-limited score mask, whether the shared
    #: experts are gated (physics.moe)
    MOE_ROUTING = "moe_routing"
    #: a model whose heads are not hidden / heads wide, or that rotates only part of each
    #: head: head_dim and rotary_dim (the activation tables' Q, K, V widths)
    ATTENTION_DIMS = "attention_dims"
    #: Llama 4: the count of each kind of layer and the settings its tables read
    #: (physics.llama4)
    LLAMA4_LAYERS = "llama4_layers"
    #: gpt-oss's block: attention sinks, its RMSNorm's fp32 normalised tensor
    ATTENTION_SINKS = "attention_sinks"
    BITSANDBYTES_VERSION = "bitsandbytes_version"
    #: FSDP's mixed-precision policy: fp32 sharded parameters, bf16 compute, no autocast
    FSDP_MIXED_PRECISION = "fsdp_mixed_precision"
    #: whose model class the job trains: transformers' (the activation tables' reference)
    #: or litgpt's own `GPT` (litgpt finetune / pretrain; physics.litgpt_block)
    MODEL_IMPLEMENTATION = "model_implementation"
    #: which part of each layer selective checkpointing recomputes
    SELECTIVE_POLICY = "selective_policy"
    #: frozen copies of the trained model's weights kept beside it as a reference (TRL's
    #: DPO / KTO / BCO trainers without `ref_model` or an adapter make one)
    REFERENCE_COPIES = "reference_copies"
    #: the dtype the reference model is loaded in, when not the trained weights' (a
    #: reference loaded anew in the compute dtype beside fp32 trained weights)
    REFERENCE_DTYPE = "reference_dtype"
    #: sequences one sample puts through the forward: a preference pair's chosen and
    #: rejected (TRL's DPO / CPO / ORPO / reward trainers concatenate them): 2
    SEQUENCES_PER_SAMPLE = "sequences_per_sample"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class FactSpec:
    """What a fact may hold. kind: int (with `lo`/`hi`), enum (`choices`), bool, str, dict."""

    name: FactName
    kind: str
    doc: str
    lo: Optional[int] = None
    hi: Optional[int] = None
    choices: tuple[str, ...] = ()
    #: None is a meaningful value (fsdp: None = "not FSDP", said by a DeepSpeed config)
    none_ok: bool = False


F = FactName
OPTIMIZERS = ("adamw", "adam", "sgd", "sgd_momentum", "adamw_8bit", "paged_adamw_8bit",
              "paged_adamw_32bit", "adafactor", "lion", "lamb", "adagrad", "rmsprop", "other")
MIXED_PRECISIONS = ("bf16", "fp16", "fp8", "none")
PARAM_DTYPES = ("fp32", "bf16", "fp16", "int8", "int4")
FSDP_STRATEGIES = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard")
#: the contract's checkpointing modes; which part of each layer "selective" recomputes is
#: the `selective_policy` fact: "attention" (Megatron's: the s² attention tensors) or "op"
#: (op-level, torchtitan's `selective_ac_option = "op"`: each block checkpointed, the
#: outputs of every other matmul and of the attention kernel kept)
CHECKPOINTING = ("none", "full", "selective")
SELECTIVE_POLICIES = ("attention", "op")
#: the estimator's name of selective checkpointing with the "op" policy (physics.sac), and
#: the `--checkpointing` spelling of it
SELECTIVE_OP = "selective_op"
CHECKPOINTING_FLAGS = CHECKPOINTING + (SELECTIVE_OP,)
ATTENTIONS = ("eager", "sdpa", "flash")
LOSS_KERNELS = ("standard", "chunked", "liger")
MODULE_LOADINGS = ("lazy", "eager")
OFFLOADS = ("none", "optimizer", "optimizer+params")
FAMILIES = ("gpt2", "llama")
AUTOCAST_DEVICES = ("cuda", "cpu")
#: whose model class a job trains (the `model_implementation` fact)
IMPLEMENTATIONS = ("transformers", "litgpt")
#: the dtypes LoRA adapters are kept in (peft: fp32 over a 16-bit base by default)
ADAPTER_DTYPES = ("fp32", "bf16", "fp16")
#: what a mixture-of-experts router keeps (physics.moe): the top-k probabilities
#: renormalised with the routing weights kept in fp32 (Mixtral), renormalised and cast to
#: the compute dtype, or cast as they are (Qwen-MoE's default), or kept fp32 as they are
#: (DeepSeek-V2)
MOE_ROUTERS = ("fp32-renormalised", "renormalised", "plain", "fp32-plain")

_SPECS = (
    FactSpec(F.MODEL, "str", "the model's name or path (hub id, local directory, catalogue name)"),
    FactSpec(F.PARAMS, "int", "all parameters of the model", lo=1),
    FactSpec(F.TRAINABLE_PARAMS, "int", "parameters that receive gradients (LoRA: the adapters)", lo=1),
    FactSpec(F.LAYERS, "int", "transformer blocks", lo=1),
    FactSpec(F.HIDDEN, "int", "hidden size", lo=1),
    FactSpec(F.HEADS, "int", "attention heads", lo=1),
    FactSpec(F.KV_HEADS, "int", "key/value heads (grouped-query attention)", lo=1),
    FactSpec(F.FFN_HIDDEN, "int", "MLP width", lo=1),
    FactSpec(F.VOCAB, "int", "vocabulary size", lo=1),
    FactSpec(F.PARAM_DTYPE, "enum", "dtype the weights are held in", choices=PARAM_DTYPES),
    FactSpec(F.MIXED_PRECISION, "enum", "autocast / mixed-precision compute dtype",
             choices=MIXED_PRECISIONS),
    FactSpec(F.OPTIMIZER, "enum", "the optimizer, by the state it keeps", choices=OPTIMIZERS),
    FactSpec(F.MICRO_BATCH, "int", "sequences per GPU per forward pass", lo=1),
    FactSpec(F.SEQ_LEN, "int", "tokens per sequence", lo=1),
    FactSpec(F.GRAD_ACCUM, "int", "micro-batches per optimizer step", lo=1),
    FactSpec(F.NODES, "int", "machines", lo=1),
    FactSpec(F.GPUS_PER_NODE, "int", "GPUs (processes) per machine", lo=1),
    FactSpec(F.WORLD_SIZE, "int", "GPUs in all", lo=1),
    FactSpec(F.ZERO_STAGE, "int", "DeepSpeed ZeRO stage (Megatron's distributed optimizer: 1)",
             lo=0, hi=3),
    FactSpec(F.FSDP, "enum", "FSDP sharding strategy (None: the job does not use FSDP)",
             choices=FSDP_STRATEGIES, none_ok=True),
    FactSpec(F.OFFLOAD, "enum", "what is offloaded to CPU memory", choices=OFFLOADS),
    FactSpec(F.TP, "int", "tensor-parallel size", lo=1),
    FactSpec(F.PP, "int", "pipeline-parallel size", lo=1),
    FactSpec(F.SP, "bool", "sequence parallelism (with tensor parallelism)"),
    FactSpec(F.ACTIVATION_CHECKPOINTING, "enum", "activation checkpointing", choices=CHECKPOINTING),
    FactSpec(F.ATTENTION, "enum", "attention implementation (eager keeps the s×s scores)",
             choices=ATTENTIONS),
    FactSpec(F.LORA, "dict", "LoRA / QLoRA settings: r, alpha, targets, base_bits, modules_to_save, "
             "dropout",
             none_ok=True),
    FactSpec(F.GPU, "str", "the GPU the job runs on"),
    FactSpec(F.FAMILY, "enum", "architecture family of the activation model", choices=FAMILIES),
    FactSpec(F.MODEL_TYPE, "str", "the transformers model_type of the resolved architecture"),
    FactSpec(F.MASTER_WEIGHTS, "bool", "16-bit weights have an fp32 master copy (DeepSpeed, "
             "FSDP MixedPrecision, Megatron; not torch.optim over 16-bit weights)"),
    FactSpec(F.DROPOUT, "prob", "the model's dropout probability (0: no masks are kept)"),
    FactSpec(F.LORA_ADAPTER_DTYPE, "enum", "the dtype the LoRA adapters are kept in (peft's "
             "default autocast_adapter_dtype: fp32 over a 16-bit base; fp32 adapters keep "
             "an fp32 copy of their input)", choices=ADAPTER_DTYPES),
    FactSpec(F.LORA_DROPOUT, "prob", "the LoRA adapters' dropout probability (lora_dropout; "
             "above 0 each adapter keeps a dropped copy of its input and a mask)"),
    FactSpec(F.AUTOCAST_DEVICE, "enum", "the device torch.autocast runs on (cuda, cpu: "
             "CPU autocast keeps pow, and gelu_new's tanh, in 16 bits)",
             choices=AUTOCAST_DEVICES),
    FactSpec(F.USE_CACHE, "bool", "transformers' use_cache in the model's config"),
    FactSpec(F.ZERO_GRAD_SET_TO_NONE, "bool", "zero_grad(set_to_none=…): False keeps the "
             "gradients allocated through the forward"),
    FactSpec(F.TRAINABLE_TENSORS, "int", "parameter tensors the optimizer steps (live model)",
             lo=1),
    FactSpec(F.ZERO_BUFFERS, "dict", "DeepSpeed ZeRO buffer settings of the job's config "
             "(bucket sizes, contiguous_gradients, overlap_comm)"),
    FactSpec(F.EXPERTS, "int", "routed experts per mixture-of-experts layer", lo=1),
    FactSpec(F.EXPERTS_PER_TOKEN, "int", "experts each token is routed to (top-k)", lo=1),
    FactSpec(F.EXPERT_FFN_HIDDEN, "int", "MLP width of one routed expert", lo=1),
    FactSpec(F.SHARED_EXPERT_FFN_HIDDEN, "int", "MLP width of the shared experts every token "
             "goes through (all of them together)", lo=1),
    FactSpec(F.ACTIVE_PARAMS, "int", "parameters one token uses (mixture of experts: the "
             "chosen experts only)", lo=1),
    FactSpec(F.MOE_LAYERS, "int", "layers whose MLP is a mixture of experts (the others are "
             "dense)", lo=1),
    FactSpec(F.MOE_ROUTER, "enum", "what the mixture-of-experts router keeps for backward",
             choices=MOE_ROUTERS),
    FactSpec(F.EXPERT_PARALLEL, "int", "expert-parallel size: ranks the routed experts of "
             "each MoE layer are spread over", lo=1),
    FactSpec(F.EXPERT_PARAMS, "int", "parameters of the routed experts (every MoE layer, "
             "every expert)", lo=1),
    FactSpec(F.LAYER_STACK, "dict", "a custom module's layers in forward order with the tensors "
             "each saves per sample (the input shape, the layers)"),
    FactSpec(F.MODEL_TENSORS, "dict", "the model's trainable parameter tensors and registered "
             "buffers by shape (from its architecture)"),
    FactSpec(F.CATALOGUE_TENSORS, "dict", "a catalogue model's parameter tensors and the "
             "parameter count they belong to, or why they are not known"),
    FactSpec(F.DEVICE, "enum", "where the model and the optimizer run (cuda, cpu)",
             choices=AUTOCAST_DEVICES),
    FactSpec(F.MODEL_CAST, "bool", "the model was cast as a whole (model.to(dtype), .half(), "
             ".bfloat16()), its floating-point buffers with it"),
    FactSpec(F.OPTIMIZER_FUSED, "bool", "the optimizer runs fused=True or capturable=True "
             "(its step counts on the device)"),
    FactSpec(F.LOSS_KERNEL, "enum", "the loss's kernel: standard (fp32 logits), chunked "
             "(lm_head chunks and cross-entropy in the compute dtype, litgpt's) or liger "
             "(Liger-Kernel's fused linear cross-entropy: no logits, the head's gradients "
             "made in the loss's forward)",
             choices=LOSS_KERNELS),
    FactSpec(F.LIGER, "dict", "Liger-Kernel beyond its switch: layers (the layer kernels "
             "applied: rms_norm, swiglu, geglu, rope) and release (the installed version)"),
    FactSpec(F.CUDA_MODULE_LOADING, "enum", "how CUDA loads its kernels: lazy (CUDA ≥ 11.7, "
             "torch's default) or eager (CUDA_MODULE_LOADING=EAGER, older CUDA)",
             choices=MODULE_LOADINGS),
    FactSpec(F.EXPANDABLE_SEGMENTS, "bool", "the CUDA caching allocator runs with "
             "expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF)"),
    FactSpec(F.OPTIMIZER_STATES, "int", "state tensors per parameter (each the parameter's "
             "size) of an `other` optimizer, read from its class", lo=0),
    FactSpec(F.LATENT_ATTENTION, "dict", "multi-head latent attention (DeepSeek): "
             "kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim"),
    FactSpec(F.MOE_ROUTING, "dict", "a DeepSeek-style router: upcast (fp32 routing), "
             "group_mask (group-limited scores), shared_gate"),
    FactSpec(F.ATTENTION_DIMS, "dict", "head_dim and rotary_dim of a model whose heads are "
             "not hidden / heads wide or that rotates part of each head"),
    FactSpec(F.LLAMA4_LAYERS, "dict", "Llama 4's layers: l2_moe, l2_dense, nope_moe, "
             "nope_dense, chunk, qk_norm, temperature"),
    FactSpec(F.ATTENTION_SINKS, "bool", "gpt-oss's block: a sink logit per head in the "
             "softmax, its RMSNorm's fp32 normalised tensor"),
    FactSpec(F.BITSANDBYTES_VERSION, "str", "the bitsandbytes release a quantised base runs "
             "(before 0.43.2 each 4-bit linear keeps its input for backward; before 0.45.0 "
             "each 8-bit linear also keeps an int8 copy of it)"),
    FactSpec(F.FSDP_MIXED_PRECISION, "bool", "FSDP's mixed-precision policy casts the fp32 "
             "sharded parameters to 16 bits for compute, without autocast (torchtitan): "
             "16-bit activations over fp32 weights and gradients"),
    FactSpec(F.MODEL_IMPLEMENTATION, "enum", "whose model class the job trains: transformers' "
             "or litgpt's own GPT (its layers save other tensors)", choices=IMPLEMENTATIONS),
    FactSpec(F.SELECTIVE_POLICY, "enum", "what selective checkpointing keeps: attention "
             "(Megatron's: all but the s² attention tensors) or op (each block checkpointed, "
             "the outputs of every other matmul and of the attention kernel kept)",
             choices=SELECTIVE_POLICIES),
    FactSpec(F.REFERENCE_COPIES, "int", "frozen copies of the trained model's weights kept "
             "as a reference model (DPO / KTO / BCO without ref_model or a PEFT adapter: one)",
             lo=0),
    FactSpec(F.REFERENCE_DTYPE, "enum", "the dtype the reference model's weights are held in "
             "(default: the trained weights')", choices=PARAM_DTYPES),
    FactSpec(F.SEQUENCES_PER_SAMPLE, "int", "sequences one sample puts through the forward "
             "(a preference pair's chosen and rejected, scored in one batch: 2)", lo=1),
)

#: one spec per fact name
SPECS: dict[FactName, FactSpec] = {s.name: s for s in _SPECS}
assert set(SPECS) == set(FactName), "every fact name has exactly one spec"

#: every fact name
FACT_NAMES: tuple[str, ...] = tuple(n.value for n in FactName)
#: facts the estimator reads but the JSON contract does not list (the ledger's lines and
#: `behaviour` say what they changed)
INTERNAL_FACTS = ("family", "model_type", "master_weights", "dropout", "lora_dropout",
                  "lora_adapter_dtype",
                  "autocast_device",
                  "use_cache", "zero_grad_set_to_none", "trainable_tensors", "zero_buffers",
                  "experts", "experts_per_token", "expert_ffn_hidden",
                  "shared_expert_ffn_hidden", "active_params", "moe_layers", "moe_router",
                  "expert_parallel", "expert_params", "layer_stack", "model_tensors",
                  "catalogue_tensors", "device",
                  "model_cast", "optimizer_fused", "optimizer_states", "expandable_segments",
                  "loss_kernel", "liger", "cuda_module_loading", "latent_attention",
                  "moe_routing", "attention_dims", "llama4_layers", "attention_sinks",
                  "bitsandbytes_version", "fsdp_mixed_precision", "model_implementation",
                  "selective_policy", "reference_copies",
                  "reference_dtype", "sequences_per_sample")
#: the facts of the JSON contract, in output order
CONTRACT_FACTS: tuple[str, ...] = tuple(n for n in FACT_NAMES if n not in INTERNAL_FACTS)
#: allowed values of the enumerated facts
ENUMS: dict[str, tuple[str, ...]] = {s.name.value: s.choices for s in _SPECS if s.kind == "enum"}
#: facts whose value is a whole number
INT_FACTS = frozenset(s.name.value for s in _SPECS if s.kind == "int")


class UnknownFactName(KeyError):
    """A fact name outside the vocabulary: a programming error, never user input."""


def fact_name(name: Any) -> FactName:
    """`"micro_batch"` or `FactName.MICRO_BATCH` → the enum member; UnknownFactName otherwise."""
    try:
        # a dict lookup first: the sizing of one plan asks this tens of thousands of times
        # and the Enum call costs ten times as much
        return FactName._value2member_map_[name]    # type: ignore[return-value]
    except (KeyError, TypeError):
        pass
    try:
        return FactName(name)
    except ValueError:
        raise UnknownFactName(f"{name!r} is not a fact name (preflight.facts.FactName)") from None


def spec(name: Any) -> FactSpec:
    return SPECS[fact_name(name)]


def as_int(val: Any) -> Optional[int]:
    """A whole number from an int, an integral float or a numeric string; None otherwise."""
    if isinstance(val, bool):
        return None
    if isinstance(val, int):
        return val
    if isinstance(val, float) and val.is_integer():
        return int(val)
    if isinstance(val, str):
        try:
            f = float(val.replace(",", "").replace("_", ""))
        except ValueError:
            return None
        return int(f) if f.is_integer() else None
    return None


#: the largest whole number any fact holds: 10^15 parameters, tokens or GPUs is no training
#: job of this world, and larger values (1e300, a 400-digit literal) overflow the formulas
MAX_INT = 10**15


def _shown(value: Any) -> str:
    """A value as quoted in a reason: a 400-digit integer is not echoed whole."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 10**20:
        return f"a {int(value.bit_length() * 0.30103) + 1}-digit number"
    if isinstance(value, float):
        return f"{value:.3g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "…"


def check_value(name: Any, value: Any) -> tuple[Any, Optional[str]]:
    """(the value in its canonical type, None) when `value` is allowed for fact `name`;
    (None, the reason) when it is not. Raises UnknownFactName for a name outside the
    vocabulary."""
    s = spec(name)
    n = s.name.value
    if value is None:
        return (None, None) if s.none_ok else (None, f"{n} has no value")
    if s.kind == "int":
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"{n} = {value} is not finite"
        i = as_int(value)
        if i is None:
            return None, f"{n} = {_shown(value)} is not a whole number"
        hi = s.hi if s.hi is not None else MAX_INT
        if (s.lo is not None and i < s.lo) or i > hi:
            rng = f"{s.lo}–{hi:,}" if s.hi is not None else f"{s.lo}–{hi:.0e}"
            return None, f"{n} = {_shown(value)} is out of range ({rng})"
        return i, None
    if s.kind == "enum":
        if value not in s.choices:
            return None, f"{n} = {value!r} is not one of {', '.join(s.choices)}"
        return value, None
    if s.kind == "bool":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, int) and value in (0, 1):
            return bool(value), None
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true", None
        return None, f"{n} = {value!r} is not true or false"
    if s.kind == "prob":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            return None, f"{n} = {value!r} is not a probability in [0, 1)"
        return float(value), None
    if s.kind == "str":
        if not isinstance(value, str) or not value:
            return None, f"{n} = {value!r} is not a name"
        return value, None
    if s.kind == "dict":
        if hasattr(value, "model_dump"):
            value = value.model_dump()
        if value is False:
            return False, None         # said: no adapter
        if not isinstance(value, dict):
            return None, f"{n} = {value!r} is not a settings table"
        return value, None
    return value, None   # pragma: no cover - every kind is handled above


def read_value(plan: Any, name: Any, assumed: Optional[dict[str, str]] = None) -> Any:
    """The value of fact `name` in `plan` when it is known and allowed, else None; a value
    that is not allowed is recorded in `assumed` (name → reason) and ignored."""
    n = fact_name(name).value
    if not plan.known(n):
        return None
    val = plan.value(n)
    if val is None:
        return None
    checked, why = check_value(n, val)
    if why is not None:
        if assumed is not None:
            assumed[n] = f"{why}: ignored"
        return None
    return checked
