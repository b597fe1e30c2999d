"""What the estimator reads from a plan, with its assumptions said out loud.

`Inputs.from_plan` is the only place that decides what to do about a missing fact:
  - facts that only *switch something on* (tp, pp, zero_stage, offload, grad_accum,
    checkpointing…) take their "off" value — a script that never mentions tensor
    parallelism does not use it — and the assumption is recorded;
  - facts that *size* something (params, micro_batch, seq_len, layers, hidden…) are never
    guessed: the lines that need them come out unknown and name them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from preflight.plan import TrainingPlan

#: Architecture families with their own activation model (see activations.py).
FAMILIES = ("gpt2", "llama")

_LLAMA_WORDS = ("llama", "mistral", "mixtral", "qwen", "gemma", "yi-", "deepseek", "olmo",
                "smollm", "phi-3", "phi3", "internlm", "baichuan", "tinyllama", "vicuna", "zephyr",
                "granite", "codellama", "starcoder2")
_GPT2_WORDS = ("gpt2", "gpt-2", "nanogpt", "gpt-neo", "gpt_neo", "gptj", "gpt-j", "pythia",
               "opt-", "bloom", "falcon", "gpt-neox", "distilgpt")


#: transformers models whose MLP activation is `gelu_new` written in Python ops
_GELU_NEW_WORDS = ("gpt2", "gpt-2", "distilgpt", "gpt-neo", "gpt_neo", "gpt-j", "gptj", "codegen")


def gelu_of(model: Optional[str]) -> str:
    """'tanh-unfused' for transformers' GPT-2-style models, else 'fused' (nn.GELU)."""
    m = str(model or "").lower()
    if "nanogpt" in m:
        return "fused"
    return "tanh-unfused" if any(w in m for w in _GELU_NEW_WORDS) else "fused"


def family_of(model: Optional[str]) -> Optional[str]:
    """'meta-llama/Llama-2-7b-hf' → 'llama', 'gpt2-medium' → 'gpt2', unknown → None."""
    if not model:
        return None
    try:        # the catalogue knows each model's architecture (Qwen, Gemma, Mistral, Pythia …)
        from preflight.models.catalog import family_of as catalog_family
        fam = catalog_family(str(model))
    except Exception:  # noqa: BLE001 - a name the catalogue cannot read falls to the words
        fam = None
    if fam:
        return fam
    m = str(model).lower()
    if any(w in m for w in _LLAMA_WORDS):
        return "llama"
    if any(w in m for w in _GPT2_WORDS):
        return "gpt2"
    return None


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
    model: Optional[str] = None
    family: str = "gpt2"
    gelu: str = "fused"             # gpt2 family: "fused" or "tanh-unfused" (gelu_new)
    #: parameter tensors of the model (None: not known) and how they were counted / why not
    param_tensors: Optional[int] = None
    param_tensors_how: str = ""
    #: param_tensors are the trainable tensors counted on the live model (not a catalogue's)
    tensors_counted: bool = False
    #: fact name → what was assumed and why (shown next to the lines it affects)
    assumed: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ derived sizes
    @property
    def mp(self) -> int:
        """Model-parallel degree: how many GPUs one copy of the model is split over."""
        return max(1, self.tp) * max(1, self.pp)

    @property
    def dp(self) -> int:
        """Data-parallel degree (replicas, or ZeRO/FSDP shards)."""
        return max(1, self.world_size // self.mp)

    @property
    def stage(self) -> int:
        """Effective sharding stage: FSDP strategies map onto ZeRO stages (LEDGER.md §3)."""
        if self.fsdp in ("full_shard", "hybrid_shard"):
            return 3
        if self.fsdp == "shard_grad_op":
            return 2
        if self.fsdp == "no_shard":
            return 0
        return self.zero_stage

    @property
    def shard(self) -> int:
        """Ranks that share one copy of the sharded states (hybrid: the GPUs of one node)."""
        if self.stage == 0:
            return 1
        if self.fsdp == "hybrid_shard":
            return max(1, min(self.dp, self.gpus_per_node // self.mp))
        return self.dp

    @property
    def sharding_name(self) -> str:
        if self.fsdp and self.fsdp != "no_shard":
            return f"FSDP {self.fsdp.upper()}"
        if self.stage:
            return f"ZeRO-{self.stage}"
        return "DDP" if self.dp > 1 else "single replica"

    @property
    def kv(self) -> Optional[int]:
        return self.kv_heads if self.kv_heads else self.heads

    @property
    def ffn(self) -> Optional[int]:
        return self.ffn_hidden

    def note_for(self, *names: str) -> str:
        """The assumptions behind a line, for its note."""
        return "; ".join(self.assumed[n] for n in names if n in self.assumed)

    # ------------------------------------------------------------------ from a plan
    @classmethod
    def from_plan(cls, plan: TrainingPlan, gpus_per_node_hint: int = 8,
                  family: Optional[str] = None) -> "Inputs":
        a: dict[str, str] = {}
        v = _Reader(plan, a).value

        def switch(name: str, off: Any, why: str) -> Any:
            val = v(name)
            if val is not None:
                return val
            a.setdefault(name, why)
            return off

        x = cls()
        for name in ("params", "micro_batch", "seq_len", "layers", "hidden", "heads",
                     "kv_heads", "ffn_hidden", "vocab", "optimizer", "model"):
            setattr(x, name, v(name))
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
        x.lora = lora

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
        x.checkpointing = switch("activation_checkpointing", "none",
                                 "activation checkpointing not given: none assumed")
        x.attention = switch("attention", "sdpa",
                             "attention implementation not given: sdpa assumed "
                             "(transformers' default; no s² matrix)")

        ws, nodes, gpn = v("world_size"), v("nodes"), v("gpus_per_node")
        if ws is None and nodes and gpn:
            ws = int(nodes) * int(gpn)
        if ws is None:
            ws = 1
            a["world_size"] = "world_size not given: 1 GPU assumed"
        x.world_size = int(ws)
        if gpn is None:
            if nodes is None:
                gpn = min(x.world_size, gpus_per_node_hint)
                if x.world_size > 1:
                    a["gpus_per_node"] = f"gpus_per_node not given: {gpn} assumed"
            else:
                gpn = max(1, -(-x.world_size // int(nodes)))     # derived, not assumed
        x.gpus_per_node = max(1, int(gpn))
        if nodes is None:
            nodes = max(1, -(-x.world_size // x.gpus_per_node))
            if nodes > 1:
                a["nodes"] = f"nodes not given: {nodes} assumed ({x.gpus_per_node} GPUs each)"
        x.nodes = int(nodes)

        # assumptions that cannot matter are not worth a line
        if x.tp == 1 and "sp" in a and "ignored" not in a["sp"]:
            del a["sp"]
        if x.fsdp and "zero_stage" in a and "ignored" not in a["zero_stage"]:
            del a["zero_stage"]
        if x.stage == 0 and "offload" in a and "ignored" not in a["offload"]:
            del a["offload"]

        fam = family or family_of(x.model)
        if fam is None:
            fam = "gpt2"
            a["family"] = ("architecture family unknown: generic GPT block "
                           "(Korthikanti et al.; GELU MLP, LayerNorm, dropout) assumed")
        x.family = fam
        x.gelu = gelu_of(x.model) if fam == "gpt2" else "fused"
        if x.optimizer in ("adamw", "adam", "adagrad", "rmsprop"):   # only they need it
            counted = plan.value("trainable_tensors")
            if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
                # counted on the live model by a training callback: exact, LoRA included
                x.param_tensors, x.param_tensors_how = counted, "counted on the live model"
                x.tensors_counted = True
            else:
                from preflight.estimate.tensors import param_tensor_count
                x.param_tensors, x.param_tensors_how = param_tensor_count(x.model, x.params)
        x.assumed = a
        return x


_POSITIVE = {"params", "trainable_params", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
             "vocab", "micro_batch", "seq_len", "grad_accum", "nodes", "gpus_per_node",
             "world_size", "tp", "pp"}
_CHOICES = {
    "optimizer": ("adamw", "adam", "sgd", "sgd_momentum", "adamw_8bit", "paged_adamw_8bit",
                  "paged_adamw_32bit", "adafactor", "lion", "lamb", "adagrad", "rmsprop", "other"),
    "param_dtype": ("fp32", "bf16", "fp16", "int8", "int4"),
    "mixed_precision": ("bf16", "fp16", "fp8", "none"),
    "fsdp": ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard"),
    "offload": ("none", "optimizer", "optimizer+params"),
    "activation_checkpointing": ("none", "full", "selective"),
    "attention": ("eager", "sdpa", "flash"),
}


class _Reader:
    """Plan values, checked: a value of the wrong type or out of range reads as missing
    and the reason is recorded (the estimator never raises on a plan)."""

    def __init__(self, plan: TrainingPlan, assumed: dict[str, str]):
        self.plan, self.assumed = plan, assumed

    def value(self, name: str) -> Any:
        if not self.plan.known(name):
            return None
        val = self.plan.value(name)
        if val is None:
            return None
        if name in _POSITIVE or name == "zero_stage":
            n = _as_int(val)
            lo = 0 if name == "zero_stage" else 1
            if n is None or n < lo or (name == "zero_stage" and n > 3):
                self.assumed[name] = f"{name} = {val!r} is not usable: ignored"
                return None
            return n
        if name == "sp":
            return bool(val)
        if name in _CHOICES:
            if val not in _CHOICES[name]:
                self.assumed[name] = f"{name} = {val!r} is not one of {', '.join(_CHOICES[name])}: ignored"
                return None
        if name == "model":
            return str(val)
        return val


def _as_int(val: Any) -> Optional[int]:
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
