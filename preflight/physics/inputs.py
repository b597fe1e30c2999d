"""What the estimator reads from a plan, with its assumptions said out loud.

`Inputs.from_plan` is the only place that decides what to do about a missing fact:
  - facts that only *switch something on* (tp, pp, zero_stage, offload, grad_accum,
    checkpointing…) take their "off" value — a script that never mentions tensor
    parallelism does not use it — and the assumption is recorded;
  - facts that *size* something (params, micro_batch, seq_len, layers, hidden…) are never
    guessed: the lines that need them come out unknown and name them.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.facts.layout import Layout
from preflight.facts.names import SELECTIVE_OP, read_value
from preflight.physics.liger import LigerRun, liger_run
from preflight.physics.mla import MLA
from preflight.physics.moe import MoE
from preflight.plan import Origin, TrainingPlan

#: the `selective_policy` of op-level selective checkpointing
SELECTIVE_OP_POLICY = "op"
from preflight.units import fmt_int

#: transformers models whose MLP activation is `gelu_new` written in Python ops
_GELU_NEW_WORDS = ("gpt2", "gpt-2", "distilgpt", "gpt-neo", "gpt_neo", "gpt-j", "gptj", "codegen")
#: their model_type values (the config's default activation_function is gelu_new)
_GELU_NEW_TYPES = ("gpt2", "gpt_neo", "gptj", "codegen")


def gelu_of(model: Optional[str], model_type: Optional[str] = None) -> str:
    """'tanh-unfused' for transformers' GPT-2-style models, else 'fused' (nn.GELU): by the
    resolved architecture's model_type when known, else by the words of the name."""
    if model_type:
        return "tanh-unfused" if model_type in _GELU_NEW_TYPES else "fused"
    m = str(model or "").lower()
    if "nanogpt" in m:
        return "fused"
    return "tanh-unfused" if any(w in m for w in _GELU_NEW_WORDS) else "fused"


@dataclass
class Inputs:
    """Plain values the physics functions take; `assumed` says what was not given."""

    params: Optional[int] = None
    trainable: Optional[int] = None
    param_dtype: Optional[str] = None
    mixed_precision: Optional[str] = None
    optimizer: Optional[str] = None
    micro_batch: Optional[int] = None
    seq_len: Optional[int] = None
    grad_accum: int = 1
    layers: Optional[int] = None
    hidden: Optional[int] = None
    heads: Optional[int] = None
    kv_heads: Optional[int] = None
    ffn_hidden: Optional[int] = None
    vocab: Optional[int] = None
    world_size: int = 1
    nodes: int = 1
    gpus_per_node: int = 1
    zero_stage: int = 0
    fsdp: Optional[str] = None
    offload: str = "none"
    tp: int = 1
    pp: int = 1
    sp: bool = False
    checkpointing: str = "none"
    attention: str = "sdpa"
    lora: Optional[dict] = None
    #: frozen copies of the model's weights kept as a reference (DPO's reference model);
    #: None: the job keeps one whose size is not known
    reference_copies: Optional[int] = 0
    #: what the job says of its reference model (why it is kept, or why its size is not known)
    reference_note: str = ""
    #: the dtype the reference model is held in (None: the trained weights')
    reference_dtype: Optional[str] = None
    #: sequences each sample puts through the forward (a preference pair: 2); `micro_batch`
    #: counts the forward's sequences, `samples_per_forward` the samples as written
    sequences_per_sample: int = 1
    model: Optional[str] = None
    model_type: Optional[str] = None    # transformers' model_type of the resolved model
    family: str = "gpt2"
    gelu: str = "fused"             # gpt2 family: "fused" or "tanh-unfused" (gelu_new)
    #: zero_grad(set_to_none=…) when the job says so (None: torch's default, True)
    set_to_none: Optional[bool] = None
    #: dropout probability of the model (None: the family's default, masks kept for gpt2)
    dropout: Optional[float] = None
    #: transformers' `use_cache` (None: the config default, True)
    use_cache: Optional[bool] = None
    #: a DeepSpeed config's ZeRO buffer settings as written (None: none written)
    zero_buffers: Optional[dict] = None
    #: the device torch.autocast runs on (None: CUDA, what the estimator sizes)
    autocast_device: Optional[str] = None
    #: mixture of experts (None: a dense model): routed experts, top-k, one expert's width,
    #: the shared experts' width, the MoE layers, the router's kind, the parameters a token
    #: uses
    experts: Optional[int] = None
    experts_per_token: Optional[int] = None
    expert_ffn_hidden: Optional[int] = None
    shared_expert_ffn_hidden: Optional[int] = None
    moe_layers: Optional[int] = None
    moe_router: str = "fp32-renormalised"
    active_params: Optional[int] = None
    #: expert parallelism: its degree, the routed experts' parameters it splits (None: not
    #: known), and why the split cannot be applied ("": it can, or ep is 1)
    expert_parallel: int = 1
    expert_params: Optional[int] = None
    ep_unknown: str = ""
    #: a custom module's layer stack (models.forward) and, when it is not known, why
    layer_stack: Optional[dict] = None
    layer_stack_unknown: str = ""
    #: DeepSeek: the latent attention's fields and the router's routing (None: llama-style)
    latent_attention: Optional[dict] = None
    #: heads not hidden / heads wide, or partly rotated: head_dim and rotary_dim (None: h / a)
    attention_dims: Optional[dict] = None
    moe_routing: Optional[dict] = None
    #: Llama 4: its layer kinds (physics.llama4; None: not Llama 4)
    llama4_layers: Optional[dict] = None
    #: gpt-oss's block (attention sinks, fp32 normalised RMSNorm tensor)
    attention_sinks: bool = False
    #: whose model class the job trains: "transformers" or "litgpt" (physics.litgpt_block)
    implementation: str = "transformers"
    #: why the layers' table is not known for a counted model whose family has none (a
    #: state-space or image-text model; "": known, or the family merely not stated)
    family_unknown: str = ""

    @property
    def moe(self) -> Optional[MoE]:
        """The MoE MLP's shape (physics.moe), None for a dense model or one whose top-k or
        expert width is not known."""
        f = self.expert_ffn_hidden or self.ffn_hidden
        if not self.experts or not self.experts_per_token or not f:
            return None
        routing = self.moe_routing or {}
        return MoE(experts=self.experts, top_k=self.experts_per_token, ffn=f,
                   shared_ffn=self.shared_expert_ffn_hidden or 0,
                   norm_topk=self.moe_router not in ("plain", "fp32-plain"),
                   weights_f32=self.moe_router in ("fp32-renormalised", "fp32-plain"),
                   router_upcast=bool(routing.get("upcast")),
                   group_mask=bool(routing.get("group_mask")),
                   shared_gate=bool(routing.get("shared_gate", True)),
                   dense_dispatch=bool(routing.get("dense_dispatch")),
                   topk_softmax=bool(routing.get("topk_softmax")))

    @property
    def mla(self) -> Optional[MLA]:
        """Multi-head latent attention (physics.mla), None for llama-style attention."""
        return MLA.from_fact(self.latent_attention)

    @property
    def block(self) -> str:
        """The activation table of the model's layers: "bert" for transformers' BERT and
        RoBERTa encoders (post-LN layers, embedding LayerNorm, MLM head transform), else the
        family's ("gpt2", "llama")."""
        if self.family == "gpt2" and self.model_type in ("bert", "roberta"):
            return "bert"
        return self.family

    @property
    def has_dropout(self) -> bool:
        """Dropout masks exist unless the probability is 0 (dropout(p=0) returns its input)."""
        return self.dropout is None or self.dropout > 0

    @property
    def kv_cache_copies(self) -> bool:
        """transformers' GPT-2 concatenates K and V into its DynamicCache even in training
        (use_cache defaults to True); the copies are what attention saves, while Q keeps the
        fused QKV output alive: two more h-wide tensors per layer. Gradient checkpointing
        turns the cache off in training. Under eager attention Q is copied and the fused
        output freed, so the copies take K's and V's place: no extra."""
        m = str(self.model or "").lower()
        gpt2 = self.model_type == "gpt2" if self.model_type else ("gpt2" in m or "gpt-2" in m)
        # eager attention copies Q to a contiguous tensor, freeing the fused QKV output: the
        # cache copies then replace K and V instead of adding to them (measured)
        return (self.gelu == "tanh-unfused" and gpt2
                and self.use_cache is not False and self.checkpointing != "full"
                and self.attention != "eager")
    #: parameter tensors of the model (None: not known) and how they were counted / why not
    param_tensors: Optional[int] = None
    param_tensors_how: str = ""
    #: param_tensors are the trainable tensors counted on the live model (not a catalogue's)
    tensors_counted: bool = False
    #: the trainable parameter tensors' shapes as [shape, count] pairs (the `model_tensors`
    #: fact or a custom module's layer stack; None: not known)
    trainable_shapes: Optional[list] = None
    #: the registered buffers as [name, shape, dtype] ("int64" | "float"); None: not modelled
    buffers: Optional[list] = None
    #: where the model and the optimizer run (None: a GPU, what the estimator sizes)
    device: Optional[str] = None
    #: the model was cast as a whole (its floating-point buffers with the weights)
    model_cast: bool = False
    #: fused=True / capturable=True: the optimizer's step counts on the device
    optimizer_fused: bool = False
    #: the caching allocator's expandable_segments:True (the reserved tier's segment slack)
    expandable_segments: bool = False
    fsdp_mp: bool = False           # FSDP mixed precision without autocast (physics.states)
    #: the loss's kernel: "standard" (fp32 logits), "chunked" or "liger" (physics.loss)
    loss_kernel: str = "standard"
    #: Liger-Kernel's kernels as applied to this model (physics.liger; None: Liger is off)
    liger: Optional[LigerRun] = None
    #: CUDA's module loading: "lazy" (the default) or "eager" (a larger context)
    cuda_module_loading: str = "lazy"
    #: an `other` optimizer's state tensors per parameter, read from its class (None: unknown)
    optimizer_states: Optional[int] = None
    #: fact name → what was assumed and why (shown next to the lines it affects)
    assumed: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ derived sizes
    @property
    def layout(self) -> Layout:
        """How the job is split over its GPUs (preflight.facts.layout, the one definition)."""
        return Layout(world_size=self.world_size, nodes=self.nodes,
                      gpus_per_node=self.gpus_per_node, tp=self.tp, pp=self.pp,
                      zero_stage=self.zero_stage, fsdp=self.fsdp)

    @property
    def mp(self) -> int:
        return self.layout.mp

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def stage(self) -> int:
        return self.layout.stage

    @property
    def shard(self) -> int:
        return self.layout.shard

    @property
    def sharding_name(self) -> str:
        return self.layout.sharding_name

    @property
    def kv(self) -> Optional[int]:
        return self.kv_heads if self.kv_heads else self.heads

    @property
    def ffn(self) -> Optional[int]:
        return self.ffn_hidden

    @property
    def samples_per_forward(self) -> Optional[int]:
        """The micro-batch as the job writes it (`per_device_train_batch_size`): samples per
        forward, each of `sequences_per_sample` sequences."""
        if self.micro_batch is None:
            return None
        return self.micro_batch // self.sequences_per_sample

    def note_for(self, *names: str) -> str:
        """The assumptions behind a line, for its note."""
        return "; ".join(self.assumed[n] for n in names if n in self.assumed)

    # ------------------------------------------------------------------ from a plan
    @classmethod
    def from_plan(cls, plan: TrainingPlan, gpus_per_node_hint: int = 8,
                  family: Optional[str] = None) -> "Inputs":
        a: dict[str, str] = {}

        def v(name: str) -> Any:
            return read_value(plan, name, a)

        def switch(name: str, off: Any, why: str) -> Any:
            val = v(name)
            if val is not None:
                return val
            a.setdefault(name, why)
            return off

        x = cls()
        for name in ("params", "micro_batch", "seq_len", "layers", "hidden", "heads",
                     "kv_heads", "ffn_hidden", "vocab", "optimizer", "model", "experts",
                     "experts_per_token", "expert_ffn_hidden", "shared_expert_ffn_hidden",
                     "moe_layers", "active_params", "expert_params"):
            setattr(x, name, v(name))
        spp = v("sequences_per_sample")
        if spp and spp > 1 and x.micro_batch:
            # a preference trainer's sample is a chosen and a rejected sequence, scored in
            # one forward: the physics sizes spp × micro_batch sequences (`micro_batch` is
            # the forward's rows from here on; `samples_per_forward` the batch as written,
            # which the planner changes and writes back)
            a["micro_batch"] = (f"{plan.fact('sequences_per_sample').reason}: "
                                f"{spp} × {x.micro_batch} sequences per forward")
            x.sequences_per_sample = spp
            x.micro_batch *= spp
        x.moe_router = v("moe_router") or "fp32-renormalised"
        x.layer_stack = v("layer_stack")
        x.latent_attention = v("latent_attention")
        x.moe_routing = v("moe_routing")
        x.attention_dims = v("attention_dims")
        x.llama4_layers = v("llama4_layers")
        x.attention_sinks = bool(v("attention_sinks"))
        if x.layer_stack is None and "layer_stack" in plan.facts:
            x.layer_stack_unknown = plan.fact("layer_stack").reason or ""
        if x.experts and not x.experts_per_token:
            a["experts_per_token"] = ("experts per token (top-k) not known: the MoE "
                                      "activations are unknown")
        lora = plan.value("lora") or None
        if hasattr(lora, "model_dump"):
            lora = lora.model_dump()
        if lora is not None and not isinstance(lora, dict):
            a["lora"] = f"lora setting {lora!r} not understood: ignored"
            lora = None
        if lora is not None:
            bits = lora.get("base_bits")
            lora = {**lora, "base_bits": bits if bits in (4, 8, 16) else 16}
            if bits not in (4, 8, 16, None):
                a["lora"] = f"lora base_bits {bits!r} not understood: 16 assumed"
            # the lora_dropout fact (`estimate --lora-dropout`) over what the LoRA config says
            ld = plan.value("lora_dropout")
            ld = lora.get("dropout") if ld is None else ld
            lora["dropout"] = float(ld) if isinstance(ld, (int, float)) and \
                not isinstance(ld, bool) and 0 <= ld < 1 else None
            # the lora_adapter_dtype fact (`estimate --lora-adapter-dtype`) over what the
            # script's peft call says (None: the compute dtype)
            adt = plan.value("lora_adapter_dtype") or lora.get("adapter_dtype")
            lora["adapter_dtype"] = adt if adt in ("fp32", "bf16", "fp16") else None
            # the bitsandbytes release decides what a quantised linear keeps (physics.bnb)
            bv = plan.value("bitsandbytes_version")
            lora["bnb_version"] = bv if isinstance(bv, str) else None
        x.lora = lora
        if "reference_copies" in plan.facts:
            f = plan.facts["reference_copies"]
            x.reference_copies = v("reference_copies")
            x.reference_dtype = v("reference_dtype")
            x.reference_note = f.reason or ("" if x.reference_copies is not None else
                                            "the reference model's size is not known")

        x.trainable = v("trainable_params")
        if x.trainable is None and x.params is not None and x.lora is None \
                and v("param_dtype") not in ("int8", "int4"):
            x.trainable = x.params
            a["trainable_params"] = "trainable_params not given: all parameters trainable"

        pd, mx = v("param_dtype"), v("mixed_precision")
        if pd is None and mx is None:
            pd, mx = "fp32", "none"
            a["param_dtype"] = a["mixed_precision"] = \
                "no precision setting found: torch's default fp32 assumed"
        elif pd is None:
            # autocast (torch.amp, HF --bf16) keeps the weights in fp32
            pd = "fp32"
            a["param_dtype"] = "param_dtype not given: fp32 weights under autocast assumed"
        elif mx is None:
            mx = "none"
            a["mixed_precision"] = "mixed_precision not given: none assumed"
        x.param_dtype, x.mixed_precision = pd, mx

        x.grad_accum = int(switch("grad_accum", 1, "grad_accum not given: 1 assumed"))
        x.tp = int(switch("tp", 1, "tp not given: 1 assumed"))
        x.pp = int(switch("pp", 1, "pp not given: 1 assumed"))
        x.sp = bool(switch("sp", False, "sp not given: off assumed"))
        x.zero_stage = int(switch("zero_stage", 0, "zero_stage not given: 0 assumed"))
        x.fsdp = v("fsdp")
        x.offload = switch("offload", "none", "offload not given: none assumed")
        ck = plan.facts.get("activation_checkpointing")
        x.checkpointing = switch("activation_checkpointing", "none",
                                 f"activation checkpointing unknown ({ck.reason}): none assumed"
                                 if ck is not None and not plan.known("activation_checkpointing")
                                 and ck.reason else
                                 "activation checkpointing not given: none assumed")
        if x.checkpointing == "selective" and v("selective_policy") == SELECTIVE_OP_POLICY:
            x.checkpointing = SELECTIVE_OP      # op-level: physics.sac's policy
        x.attention = switch("attention", "eager" if x.attention_sinks else "sdpa",
                             "attention implementation not given: eager assumed "
                             "(transformers' default for gpt-oss, which has no sdpa path)"
                             if x.attention_sinks else
                             "attention implementation not given: sdpa assumed "
                             "(transformers' default; no s² matrix)")

        lay = Layout.from_values(v, gpus_per_node_hint)
        x.world_size, x.nodes, x.gpus_per_node = lay.world_size, lay.nodes, lay.gpus_per_node
        a.update(lay.assumed)
        model_at = plan.facts["model"].source if "model" in plan.facts else None
        for name, f in plan.facts.items():
            # a value read by a knob's name, from a document no framework adapter reads,
            # is said beside the lines it sizes as the assumption it is (the shape of an
            # inferred model once, as the model's)
            if f.known and f.origin is Origin.INFERRED and (
                    name == "model" or model_at is None or f.source != model_at):
                a.setdefault(name, f"{name} {f.value!r} inferred ({f.reason or 'by a key name'})")
        x.expert_parallel = int(v("expert_parallel") or 1)
        x.ep_unknown = expert_parallel_problem(x)

        _master_weights(x, plan, a)

        # assumptions that cannot matter are not worth a line
        if x.tp == 1 and "sp" in a and "ignored" not in a["sp"]:
            del a["sp"]
        if x.fsdp and "zero_stage" in a and "ignored" not in a["zero_stage"]:
            del a["zero_stage"]
        if x.stage == 0 and "offload" in a and "ignored" not in a["offload"]:
            del a["offload"]

        # the family is a fact of model resolution (a config's model_type, the catalogue);
        # `family` is `preflight estimate --family`
        fam = family or v("family")
        famf = plan.facts.get("family")
        if fam is None and famf is not None and famf.origin is Origin.UNKNOWN:
            # resolution counted the model and said its layers have no table
            x.family_unknown = famf.reason or "the architecture's layers are not modelled"
        if fam is None:
            fam = "gpt2"
        if family is None and v("family") is None and not x.family_unknown:
            a["family"] = ("architecture family unknown: generic GPT block "
                           "(Korthikanti et al.; GELU MLP, LayerNorm, dropout) assumed")
        x.family = fam
        x.model_type = v("model_type")
        x.gelu = gelu_of(x.model, x.model_type) if fam == "gpt2" else "fused"
        mt = v("model_tensors")
        if isinstance(mt, dict):
            x.trainable_shapes = mt.get("trainable")
            x.buffers = mt.get("buffers")
        elif isinstance(x.layer_stack, dict) and x.layer_stack.get("param_shapes") \
                and x.lora is None:
            # a custom module: every distinct parameter, all trainable
            x.trainable_shapes = [[list(s), 1] for s in x.layer_stack["param_shapes"]]
        if x.trainable_shapes is not None and x.trainable != _numel(x.trainable_shapes):
            # the job trains other tensors than the architecture's (frozen layers…)
            x.trainable_shapes = None
        x.device = v("device")
        x.model_cast = v("model_cast") is True
        x.optimizer_fused = v("optimizer_fused") is True
        x.expandable_segments = v("expandable_segments") is True
        x.fsdp_mp = v("fsdp_mixed_precision") is True
        x.loss_kernel = v("loss_kernel") or "standard"
        if x.loss_kernel == "liger":
            # what Liger patches follows the model's type; a type it does not cover keeps
            # the standard loss and the eager layers
            x.liger = liger_run(x.model_type, x.family, plan.value("liger"), dense=not (
                x.experts or x.latent_attention or x.attention_sinks or x.llama4_layers))
            a["liger"] = x.liger.note
            if not x.liger.loss:
                x.loss_kernel = "standard"
        x.cuda_module_loading = v("cuda_module_loading") or "lazy"
        states = v("optimizer_states")
        x.optimizer_states = states if isinstance(states, int) and x.optimizer == "other" else None
        if x.optimizer in ("adamw", "adam", "adagrad", "rmsprop", "adafactor"):  # they need it
            counted = v("trainable_tensors")
            if counted is not None:
                # counted on the live model by a training callback: exact, LoRA included
                x.param_tensors, x.param_tensors_how = counted, "counted on the live model"
                x.tensors_counted = True
            elif x.trainable_shapes is not None:
                x.param_tensors = sum(int(n) for _, n in x.trainable_shapes)
                x.param_tensors_how = "the trainable tensors of the model's architecture"
                x.tensors_counted = True
            else:
                x.param_tensors, x.param_tensors_how = param_tensor_count(
                    x.model, x.params, plan.value("catalogue_tensors"))
        stn = plan.value("zero_grad_set_to_none")
        x.set_to_none = stn if isinstance(stn, bool) else None
        dp = plan.value("dropout")
        x.dropout = float(dp) if isinstance(dp, (int, float)) and not isinstance(dp, bool) \
            and 0 <= dp < 1 else None
        x.implementation = v("model_implementation") or "transformers"
        if x.implementation == "litgpt" and x.dropout is None:
            x.dropout = 0.0             # litgpt's GPT has no dropout
        x.autocast_device = v("autocast_device")
        uc = plan.value("use_cache")
        x.use_cache = uc if isinstance(uc, bool) else None
        zb = v("zero_buffers")
        x.zero_buffers = zb if isinstance(zb, dict) else None
        x.assumed = a
        return x


def param_tensor_count(model: Optional[str], params: Optional[int],
                       catalogue: Optional[dict]) -> tuple[Optional[int], str]:
    """How many parameter tensors the model has, with the formula; (None, why) when that
    is not known.

    `catalogue`: the `catalogue_tensors` fact (models.param_tensors: the catalogue shape's
    tensors and parameter count, or why they are not known). Only a catalogue model whose
    exact parameter count equals the plan's `params` is counted (a plan that changed the
    model's size does not have the catalogue's tensors).
    """
    if not model or params is None:
        return None, "the model is not known"
    if not isinstance(catalogue, dict) or catalogue.get("model") != model:
        return None, "the model's shape is not known"
    if catalogue.get("unknown"):
        return None, str(catalogue["unknown"])
    if catalogue["params"] != params:
        return None, (f"params {fmt_int(params)} differ from {model}'s "
                      f"{fmt_int(catalogue['params'])}: its tensors are not the catalogue's")
    return catalogue["tensors"], catalogue["how"]


def _numel(shapes: list) -> int:
    """Elements of [shape, count] pairs."""
    return sum(int(count) * math.prod(int(d) for d in dims) for dims, count in shapes)


def expert_parallel_problem(x: "Inputs") -> str:
    """Why expert parallelism of degree ep cannot split this job's experts ("" when it can,
    or when ep is 1): ep ranks hold E/ep experts each, so ep divides E; they are data-parallel
    ranks of one model copy, so ep divides the data-parallel degree; and the experts'
    parameters come from a counted model shape."""
    ep = x.expert_parallel
    if ep <= 1:
        return ""
    if not x.experts:
        return f"expert parallelism ({ep}) needs a mixture-of-experts model"
    if x.experts % ep:
        return f"expert parallelism {ep} does not divide the {x.experts} experts"
    if x.dp % ep:
        return (f"expert parallelism {ep} does not divide the data-parallel degree "
                f"{x.dp} (world {x.world_size} / tp·pp {x.mp})")
    if x.stage >= 1 and x.shard % ep:
        return (f"expert parallelism {ep} does not divide the {x.shard} ranks "
                f"{x.sharding_name} shards over")
    if x.expert_params is None:
        return "the experts' parameters are not known (no counted model shape)"
    return ""


def _master_weights(x: "Inputs", plan: TrainingPlan, a: dict[str, str]) -> None:
    """16-bit weights under 16-bit autocast: whether an fp32 master copy exists is the
    framework's choice, not the dtypes'. DeepSpeed, Megatron (a ZeRO stage their
    configuration states, even 0) and FSDP `MixedPrecision` keep fp32 masters; `master_weights` says so explicitly
    (`estimate --precision bf16-mixed`). Otherwise — weights loaded or cast to 16 bits and
    trained by a torch optimizer, with HF Trainer `bf16=True`, accelerate or plain
    autocast, under DDP too — nothing makes a copy: the optimizer state is kept in the
    weights' dtype, as pure 16-bit training (`mixed_precision` becomes "none")."""
    if x.param_dtype not in ("bf16", "fp16") or x.mixed_precision not in ("bf16", "fp16"):
        return
    said = plan.value("master_weights")
    zero = plan.fact("zero_stage")
    # a ZeRO stage said by a DeepSpeed / Megatron configuration (even 0): their 16-bit
    # optimizers keep fp32 masters; the extractor's default stage 0 says nothing
    ds = zero.known and zero.origin not in (Origin.DEFAULT, Origin.ASSUMED)
    if isinstance(said, bool):
        keep, why = said, ""
    elif ds or x.fsdp:
        keep, why = True, ""
    else:
        keep, why = False, (f"{x.param_dtype} weights trained by a torch optimizer under "
                            f"{x.mixed_precision} autocast (no DeepSpeed, no FSDP "
                            "MixedPrecision): no fp32 master copy, optimizer state in "
                            f"{x.param_dtype}")
    if not keep:
        x.mixed_precision = "none"
        a["mixed_precision"] = why or "master_weights = False: no fp32 master copy"
