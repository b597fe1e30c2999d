"""Model states: weights, gradients, optimizer state and master weights (docs/ledger.md).

These four items do not depend on the batch: they are resident for the whole run and
decide case A ("the model states do not fit"). Bytes per trainable parameter:

    precision (param_dtype, mixed_precision)   weights  grads  master  optimizer dtype
    fp32, none                                    4       4      —      fp32
    fp32, bf16|fp16 (torch autocast)              4       4      —      fp32   (+ 16-bit
                                                                              weight copies
                                                                              in activations)
    bf16|fp16, bf16|fp16 (fp32 master weights)    2       2      4      fp32
    bf16|fp16, none (pure 16-bit)                 2       2      —      param dtype
                                                                        (torch.optim keeps
                                                                        state like the param)

Optimizer state per parameter (elements × bytes of the optimizer dtype):
Adam/AdamW/LAMB 2 (m, v); SGD 0; SGD+momentum, Lion, Adagrad, RMSprop 1; 8-bit Adam
2 × 1 byte whatever the dtype (bitsandbytes; block constants ≈ 0.2 % not counted);
paged 32-bit AdamW 2 × 4 bytes; Adafactor ≈ 2/h elements (a factored second moment keeps
one value per row and per column of each matrix, no first moment by default).

Mixed-precision AdamW is therefore 2 + 2 + 8 + 4 = 16 bytes per parameter.

Sharding (data-parallel degree Nd, K = optimizer + master bytes):
    ZeRO-1: weights + grads + K/Nd;  ZeRO-2: weights + (grads + K)/Nd;  ZeRO-3: all / Nd
(FSDP FULL_SHARD ≈ 3, SHARD_GRAD_OP ≈ 2, HYBRID_SHARD ≈ 3 within a node). Tensor and
pipeline parallelism split every item by tp × pp first (an even split is assumed; the
first pipeline stage also holds the embedding).

Expert parallelism (ep) spreads each MoE layer's routed experts over ep of the
data-parallel ranks: a rank holds E/ep experts, so the experts' share Ne of an item that
is not sharded is divided by ep, the rest (attention, norms, router, shared experts,
embeddings) is not: b × ((N − Ne) + Ne / ep). An item ZeRO / the distributed optimizer
shards over Nd ranks is sharded for the experts over the Nd/ep ranks that hold the same
experts, Ne / (ep · Nd/ep) = Ne / Nd: ep leaves it as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional

from preflight.physics.inputs import Inputs
from preflight.physics.lora import frozen_base_bytes
from preflight.physics.result import LedgerLine
from preflight.physics.stages import Stage
from preflight.units import fmt_int

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": Fraction(1, 2)}


@dataclass(frozen=True)
class Precision:
    """Bytes per trainable parameter for each model-state item under one precision."""

    weight: int
    grad: int
    master: int                 # 0 = no separate fp32 copy
    opt_dtype: str              # dtype the optimizer state is kept in
    act: int                    # bytes per activation element
    autocast: bool              # fp32 weights cast to 16 bits on the fly
    label: str
    dtype: str = "fp32"         # dtype of the weights and gradients


def precision(param_dtype: str, mixed_precision: str) -> Precision:
    """The precision regime from the two plan facts (see the module docstring's table)."""
    pd = param_dtype if param_dtype in ("fp32", "bf16", "fp16") else "bf16"
    mx = mixed_precision or "none"
    half = mx in ("bf16", "fp16", "fp8")
    if pd == "fp32" and half:
        return Precision(4, 4, 0, "fp32", 2, True, f"fp32 weights under {mx} autocast", "fp32")
    if pd == "fp32":
        return Precision(4, 4, 0, "fp32", 4, False, "fp32", "fp32")
    if half:
        return Precision(2, 2, 4, "fp32", 2, False,
                         f"{pd} weights and grads, fp32 master weights ({mx} mixed precision)", pd)
    return Precision(2, 2, 0, pd, 2, False, f"pure {pd} (no master weights)", pd)


def precision_of(x: Inputs) -> Precision:
    """The job's precision regime (`precision`), and FSDP's mixed-precision policy without
    autocast (`fsdp_mixed_precision`: torchtitan's FSDP2 MixedPrecisionPolicy): the
    sharded parameters, their gradients and the optimizer state stay fp32, but each unit
    is all-gathered in 16 bits and computes there, so the activations are the 16-bit
    tables (a 16-bit residual stream, no per-linear casts), not autocast's."""
    p = precision(x.param_dtype or "fp32", x.mixed_precision or "none")
    if x.fsdp_mp and x.fsdp and p.autocast:
        return Precision(4, 4, 0, "fp32", 2, False,
                         f"fp32 sharded weights and grads, {x.mixed_precision} compute (FSDP "
                         "mixed precision, no autocast)", "fp32")
    return p


#: optimizer → (state elements per parameter, fixed bytes per element or None = opt dtype,
#:              label). Adafactor is special-cased (its state depends on matrix shapes).
OPTIMIZERS: dict[str, tuple[float, Optional[int], str]] = {
    "adamw": (2, None, "AdamW m, v"),
    "adam": (2, None, "Adam m, v"),
    "lamb": (2, None, "LAMB m, v"),
    "sgd": (0, None, "SGD (no state)"),
    "sgd_momentum": (1, None, "SGD momentum buffer"),
    "lion": (1, None, "Lion momentum"),
    "adagrad": (1, None, "Adagrad sum of squares"),
    "rmsprop": (1, None, "RMSprop square average"),
    "adamw_8bit": (2, 1, "8-bit AdamW m, v (bitsandbytes)"),
    "paged_adamw_8bit": (2, 1, "paged 8-bit AdamW m, v (bitsandbytes)"),
    "paged_adamw_32bit": (2, 4, "paged 32-bit AdamW m, v (bitsandbytes)"),
}


def optimizer_bytes_per_param(optimizer: str, opt_dtype: str = "fp32",
                              hidden: Optional[int] = None) -> Optional[Fraction]:
    """Bytes of optimizer state per trainable parameter; None when it cannot be known.

    Adafactor keeps one value per row and one per column of each weight matrix: for an
    h×h matrix that is 2h values for h² weights, so ≈ 2/h values per weight (an upper
    bound: wide MLP and embedding matrices need fewer).
    """
    if optimizer == "adafactor":
        if not hidden:
            return None
        return Fraction(2 * DTYPE_BYTES[opt_dtype], hidden)
    if optimizer not in OPTIMIZERS:
        return None
    elems, fixed, _ = OPTIMIZERS[optimizer]
    return Fraction(elems) * (fixed if fixed is not None else DTYPE_BYTES[opt_dtype])


def adafactor_state_elems(shapes: list) -> int:
    """torch.optim.Adafactor's state elements for parameters of these shapes: a matrix (or
    higher) keeps a row variance (its last dimension reduced) and a column variance (the
    second-to-last reduced); a vector keeps a full variance. (o, i) → o + i."""
    n = 0
    for s in shapes:
        total = math.prod(s)
        n += total // s[-1] + total // s[-2] if len(s) > 1 else total
    return n


def zero_per_gpu_bytes(n: int, nd: int, stage: int, weight: int = 2, grad: int = 2,
                       k: int = 12) -> int:
    """ZeRO model-state bytes per GPU (Rajbhandari et al.; docs/ledger.md, "Sharding").

    stage 0: (w+g+K)·N; 1: (w+g)·N + K·N/Nd; 2: w·N + (g+K)·N/Nd; 3: (w+g+K)·N/Nd.
    Defaults give the mixed-precision Adam numbers 16N, 4N + 12N/Nd, 2N + 14N/Nd, 16N/Nd.
    Rounded up: a rank holds at least its padded share.
    """
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0–3, got {stage}")
    if nd < 1:
        raise ValueError("data-parallel degree must be ≥ 1")
    full = [weight, grad, k]
    sharded = {0: 0, 1: 1, 2: 2, 3: 3}[stage]    # how many of (w, g, K) are sharded, from the end
    resident = sum(full[:3 - sharded])
    divided = sum(full[3 - sharded:])
    return resident * n + math.ceil(Fraction(divided * n, nd))


def _ceil(x: Fraction | int) -> int:
    return math.ceil(x)


def _b(x: Fraction | int | float) -> str:
    """Bytes per element as written in a formula: '2 B', '0.5 B'."""
    x = Fraction(x)
    return f"{x.numerator} B" if x.denominator == 1 else f"{float(x):g} B"


def _div(parts: list[tuple[str, int]]) -> tuple[int, str]:
    """Divisor and its text: [('tp', 2), ('ZeRO-3', 8)] → 16, ' / 2 (tp) / 8 (ZeRO-3)'."""
    d, text = 1, ""
    for why, k in parts:
        if k > 1:
            d *= k
            text += f" / {k} ({why})"
    return d, text


def _quant_constant_bytes(frozen: int, bits: int, double_quant: bool) -> tuple[int, str]:
    """bitsandbytes 4-bit: one absmax per 64 weights, fp32 (4 B), or 8-bit with double
    quantisation plus one fp32 per 256 absmax; LLM.int8: one fp32 scale per row (not
    countable without shapes: left out and said)."""
    if bits != 4:
        return 0, ""
    blocks = -(-frozen // 64)
    if double_quant:
        second = -(-blocks // 256)
        return blocks + 4 * second, f"{fmt_int(blocks)} absmax × 1 B + {fmt_int(second)} × 4 B"
    return 4 * blocks, f"{fmt_int(blocks)} absmax × 4 B (one fp32 per 64 weights)"


def _frozen_from_shapes(lora: dict, p: Precision) -> Optional[tuple[int, str]]:
    """The frozen base of a quantised LoRA from the model's shapes (`resolve` puts
    base_params, quantized_params and quantized_rows in the `lora` fact): only the blocks'
    linear weights are quantised, the rest stays 16-bit."""
    if not all(k in lora for k in ("base_params", "quantized_params", "quantized_rows")):
        return None
    other = p.weight if p.weight in (2, 4) and p.dtype in ("fp32", "bf16", "fp16") else 2
    return frozen_base_bytes(lora, double_quant=bool(lora.get("double_quant")), other_bytes=other)


#: torch.optim optimizers that keep `state["step"]` as a 0-dim fp32 tensor per parameter →
#: (name, whether fused=True / capturable=True can put it on the parameters' device)
STEP_TENSOR_OPTIMIZERS = {"adamw": ("AdamW", True), "adam": ("Adam", True),
                          "adagrad": ("Adagrad", True), "rmsprop": ("RMSprop", True),
                          "adafactor": ("Adafactor", False)}


def step_line(x: Inputs, opt: str) -> LedgerLine | str:
    """torch.optim's Adam/AdamW, Adagrad, RMSprop and Adafactor keep a `step` count per
    parameter as a 0-dim fp32 tensor: 4 B × the number of parameter *tensors* (not
    parameters). A ledger line of its own when that number is known (`Inputs.param_tensors`,
    from the model's shape), else a note for the optimizer line saying it is left out.

    Where the counts live: torch creates them on the host (`torch.tensor(0.0)`) unless the
    optimizer runs `fused=True` or `capturable=True` (Adafactor has neither), so on a GPU
    they are host memory and the line is 0 B with the host bytes in its formula; on a CPU
    run (`device` cpu) the host is the device, and fused / capturable put them on the GPU.

    Per GPU: a pipeline stage holds its share of the tensors; tensor parallelism splits each
    tensor but keeps one step per shard. Sharded optimizers (ZeRO / FSDP) step flat
    partitions (one count per group or flat parameter), and LoRA trains other tensors than
    the model's: left out with a note unless the trainable tensors are known.
    """
    name, can_fuse = STEP_TENSOR_OPTIMIZERS[opt]
    left_out = f"{name}'s 4 B `step` tensor per parameter tensor not counted"
    if not x.tensors_counted and (x.lora is not None
                                  or (x.trainable is not None and x.trainable != x.params)):
        return f"{left_out}: the trainable tensors are not known"
    if x.stage > 0:
        return f"{left_out}: {x.sharding_name} steps flat partitions"
    if x.param_tensors is None:
        return f"{left_out}: the number of parameter tensors is not known " \
               f"({x.param_tensors_how or 'no model shape'})"
    n = -(-x.param_tensors // max(1, x.pp))
    pp = f" / {x.pp} (pp)" if x.pp > 1 else ""
    formula = f"4 B × {fmt_int(x.param_tensors)} tensors{pp}  [{x.param_tensors_how}]"
    label = f"{name} step counts (fp32, one per parameter tensor)"
    if x.device == "cpu":
        return LedgerLine(key="optimizer", label=label, bytes=4 * n, formula=formula,
                          note="a CPU run: torch.optim's host-side `step` tensors are in the "
                               "device's memory")
    if x.optimizer_fused and can_fuse:
        return LedgerLine(key="optimizer", label=label + " on the GPU", bytes=4 * n,
                          formula=formula,
                          note="fused=True / capturable=True create `step` on the "
                               "parameters' device")
    return LedgerLine(
        key="optimizer", label=label + " — on the host", bytes=0,
        formula=f"0 (on the host: {formula} = {fmt_int(4 * n)} B)",
        note="torch.optim creates `step` on the CPU unless fused=True or capturable=True"
        if can_fuse else "torch.optim's Adafactor always keeps `step` on the CPU")


def buffer_line(x: Inputs, p: Precision) -> Optional[LedgerLine]:
    """The registered buffers of the model's modules (`Inputs.buffers`, from its
    architecture): position_ids and token_type_ids (int64, BERT's embeddings), the rotary
    embedding's inv_freq / original_inv_freq (llama-like decoders), gemma's embed_scale.
    They live on the device with the model, unsharded (ZeRO / FSDP shard parameters only)
    and not offloaded. Integer buffers keep their dtype; floating-point ones are created in
    fp32 — also in a model created or loaded in 16 bits — and a cast of the whole model
    (`model.to(torch.bfloat16)`, `.half()`) casts them with the weights. None when the
    architecture creates none or they are not modelled."""
    if not x.buffers:
        return None
    cast = x.model_cast and p.dtype in ("bf16", "fp16")
    fb = DTYPE_BYTES[p.dtype] if cast else 4
    groups: dict[tuple[int, int], list[str]] = {}
    for name, dims, dtype in x.buffers:
        k = math.prod(int(d) for d in dims)
        groups.setdefault((8 if dtype == "int64" else fb, k), []).append(
            str(name).rsplit(".", 1)[-1])
    total = sum(b * k * len(names) for (b, k), names in groups.items())
    formula = " + ".join(f"{b} B × {len(names)} × {fmt_int(k)} ({', '.join(names)})"
                         for (b, k), names in groups.items())
    floats = any(dtype != "int64" for _, _, dtype in x.buffers)
    how = "" if not floats else (
        f"floating-point buffers cast to {p.dtype} with the model" if cast else
        "floating-point buffers in fp32 (as created; a cast of the whole model, "
        "model.to(dtype), casts them)")
    return LedgerLine(key="params", label="registered buffers of the model's modules",
                      bytes=total, formula=formula,
                      note=_join("on the device with the model, on every rank", how))


#: torch.optim optimizers whose foreach step (the CUDA default) allocates one temporary per
#: parameter, in the state dtype, for the whole parameter list at once:
#: Adam/AdamW `exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)`; Adafactor `var_estimates`.
FOREACH_TEMPORARY = {"adamw": "AdamW", "adam": "Adam", "adafactor": "Adafactor"}


def optimizer_temporaries(x: Inputs, opt: str, opt_dtype: str, n_train: int, d: int,
                          dt: str, split: Optional["Split"] = None) -> Optional[LedgerLine]:
    """The optimizer step's temporaries, alive only inside `optimizer.step()`.

    torch.optim's foreach implementations (the default on CUDA) work on the whole list of
    parameters per op: Adam/AdamW compute `sqrt(v)` for every parameter at once before the
    in-place update, one state-dtype copy of the parameters; Adafactor builds its variance
    estimates the same way. SGD (momentum or not, no weight decay) updates in place. DeepSpeed
    (FusedAdam) and `fused=True` run one kernel without a full-size temporary; bitsandbytes'
    8-bit optimizers are fused too.
    """
    if opt not in FOREACH_TEMPORARY or (x.stage >= 1 and not x.fsdp):
        return None
    nb = DTYPE_BYTES[opt_dtype]
    n, f = split(nb, n_train, x.stage >= 1) if split is not None else \
        (_ceil(Fraction(nb * n_train, d)), f"{nb} B × {fmt_int(n_train)}{dt}")
    return LedgerLine(
        key="optimizer", label=f"{FOREACH_TEMPORARY[opt]} foreach step temporaries "
                               f"({opt_dtype}, inside optimizer.step())",
        bytes=n, lifetime="step", formula=f,
        note="torch.optim's foreach default on CUDA; fused=True or DeepSpeed's FusedAdam "
             "have none")


#: bytes per element, elements, sharded by ZeRO / FSDP → (bytes per GPU, formula)
Split = Callable[[Fraction | int, int, bool], tuple[int, str]]


def expert_split(x: Inputs, mp_parts: list[tuple[str, int]], shard_name: str,
                 nd: int) -> Optional[Split]:
    """The split of an item between the dense part and the routed experts under expert
    parallelism (module docstring); None when ep is 1."""
    ep, ne = x.expert_parallel, x.expert_params
    if ep <= 1 or ne is None or x.ep_unknown:
        return None

    def split(b: Fraction | int, n: int, sharded: bool) -> tuple[int, str]:
        d, dt = _div(mp_parts + ([(shard_name, nd)] if sharded else []))
        if sharded and nd % ep == 0:
            # the Nd/ep ranks holding the same experts shard them: Ne / (ep·Nd/ep) = Ne / Nd
            return (_ceil(Fraction(b) * n / d),
                    f"{_b(b)} × {fmt_int(n)}{dt} (experts: / {ep} (ep) / {nd // ep} "
                    f"(their {shard_name} ranks))")
        de, _ = _div(mp_parts + [("ep", ep)])
        return (_ceil(Fraction(b) * (n - ne) / d + Fraction(b) * ne / de),
                f"{_b(b)} × ({fmt_int(n - ne)} + {fmt_int(ne)} experts / {ep} (ep)){dt}")

    return split


def model_states(x: Inputs, stage: Optional["Stage"] = None) -> tuple[list[LedgerLine], list[str]]:
    """Ledger lines for weights, grads, optimizer and master weights, and the facts missing.

    Lines that cannot be computed have bytes=None and a note naming the missing fact.
    `stage`: one pipeline stage whose own parameters (`Stage.params`, embeddings on the
    first, the output head on the last) replace the even split n / pp.
    """
    lines: list[LedgerLine] = []
    missing: list[str] = []
    p = precision_of(x)
    mp_parts = [("tp", x.tp), ("pp", x.pp)]
    shard_name = x.sharding_name
    st, nd = x.stage, x.shard
    base_note = x.note_for("param_dtype", "mixed_precision")

    def div(sharded: bool) -> tuple[int, str]:
        return _div(mp_parts + ([(shard_name + (" within a node" if x.fsdp == "hybrid_shard"
                                                else ""), nd)] if sharded else []))

    n_total, n_train = x.params, x.trainable
    stage_note = ""
    if stage is not None and stage.params is not None:
        n_total = n_train = stage.params
        mp_parts = [("tp", x.tp)]
        stage_note = (f"pipeline stage {stage.index}'s parameters: {stage.params_formula} "
                      f"= {fmt_int(stage.params)}")
    lora = x.lora
    quant_bits = {"int8": 8, "int4": 4}.get(x.param_dtype or "")
    base_bits = int(lora.get("base_bits", 16)) if lora else (quant_bits or 16)
    if (lora or {}).get("adapter_dtype") in ("bf16", "fp16"):
        adapters = p        # adapters in the model's dtype (`autocast_adapter_dtype=False`)
    elif lora is not None or quant_bits:
        # LoRA adapters are created in fp32 (peft's autocast_adapter_dtype default): they are
        # their own master copy, and the optimizer runs on them in fp32.
        adapters = Precision(4, 4, 0, "fp32", p.act, p.autocast, "fp32 LoRA adapters", "fp32")
    else:
        adapters = p

    if n_total is None:
        missing.append("params")
    if n_train is None:
        missing.append("trainable_params")
    ep_why = ""
    if x.expert_parallel > 1:
        ep_why = x.ep_unknown or (
            "expert parallelism with frozen weights (which experts are trained is not known)"
            if lora is not None or quant_bits or n_total != n_train else
            "expert parallelism within one pipeline stage (its experts are not counted)"
            if stage_note else
            "Adafactor's factored state under expert parallelism is not modelled"
            if x.optimizer == "adafactor" else "")
    if ep_why:
        return [LedgerLine(key=k, label=label, bytes=None, note=f"unknown: {ep_why}")
                for k, label in (("params", "weights"), ("grads", "gradients"),
                                 ("optimizer", "optimizer state"),
                                 ("master", "master weights"))], missing
    split = expert_split(x, mp_parts, shard_name + (" within a node" if x.fsdp == "hybrid_shard"
                                                    else ""), nd)

    # ---- weights -------------------------------------------------------------------
    d, dt = div(st >= 3)
    if n_train is None:
        lines.append(LedgerLine(key="params", label="trainable weights", bytes=None,
                                note="unknown: needs params / trainable_params"))
    else:
        lines.append(LedgerLine(
            key="params", label=("LoRA adapter weights (fp32)" if adapters is not p
                                 else f"weights ({p.dtype}{', autocast' if p.autocast else ''})"),
            bytes=_ceil(Fraction(adapters.weight * n_train, d)),
            formula=f"{adapters.weight} B × {fmt_int(n_train)}{dt}",
            note=_join(base_note, x.note_for("trainable_params"), stage_note)))
        if split is not None:
            lines[-1] = _split_line(lines[-1], split, adapters.weight, n_train, st >= 3)
    exact = _frozen_from_shapes(lora, p) if lora and base_bits < 16 else None
    if exact is not None and n_train is not None:
        fbytes, fformula = exact
        lines.append(LedgerLine(
            key="params",
            label=f"frozen base weights ({base_bits}-bit linear layers in the blocks; "
                  "no gradient, optimizer state or master copy)",
            bytes=_ceil(Fraction(fbytes, d)), formula=fformula + dt,
            note="embeddings, norms and the output head stay in 16 bits"))
    elif n_total is not None and n_train is not None and n_total > n_train:
        frozen = n_total - n_train
        fb = Fraction(base_bits, 8) if base_bits < 16 else Fraction(p.weight)
        lines.append(LedgerLine(
            key="params",
            label=f"frozen base weights ({base_bits}-bit; no gradient, optimizer state or master copy)"
            if base_bits < 16 else "frozen weights (no gradient, optimizer state or master copy)",
            bytes=_ceil(fb * frozen / d), formula=f"{_b(fb)} × {fmt_int(frozen)}{dt}",
            note="all frozen weights counted at the base width; quantisation libraries keep "
                 "embeddings and norms in 16 bits" if base_bits < 16 else ""))
        qb, qf = _quant_constant_bytes(frozen, base_bits, bool(lora and lora.get("double_quant")))
        if qb:
            lines.append(LedgerLine(key="params", label="4-bit quantisation constants",
                                    bytes=_ceil(Fraction(qb, d)), formula=qf + dt))
    elif n_total is None and (lora is not None or quant_bits):
        lines.append(LedgerLine(key="params", label="frozen base weights", bytes=None,
                                note="unknown: needs params"))

    # ---- a frozen reference model ----------------------------------------------------
    # TRL's DPO-style trainers keep a frozen copy of the policy as the reference (none with
    # a PEFT adapter: the base with the adapter switched off is the reference); ZeRO-3 and
    # FSDP full sharding shard it as they shard the model, ZeRO-1/2 keep it whole (TRL
    # prepares it with stage 0 then)
    refs = x.reference_copies
    if refs is None and lora is None:
        lines.append(LedgerLine(key="params", label="reference model weights", bytes=None,
                                note=f"unknown: {x.reference_note}"))
    elif refs and lora is None and n_total is not None:
        d, dt = div(st >= 3)
        rdt = x.reference_dtype or p.dtype
        rb = DTYPE_BYTES.get(x.reference_dtype, p.weight) if x.reference_dtype else p.weight
        lines.append(LedgerLine(
            key="params",
            label=f"reference model weights ({refs} frozen cop{'y' if refs == 1 else 'ies'} "
                  f"of the weights, {rdt}; no gradient, optimizer state or master copy)",
            bytes=_ceil(Fraction(refs) * rb * n_total / d),
            formula=f"{refs} × {_b(rb)} × {fmt_int(n_total)}{dt}",
            note=x.reference_note))

    # ---- gradients -----------------------------------------------------------------
    d, dt = div(st >= 2)
    if n_train is None:
        lines.append(LedgerLine(key="grads", label="gradients", bytes=None,
                                lifetime="gradients", note="unknown: needs trainable_params"))
    else:
        lines.append(LedgerLine(
            key="grads", label=f"gradients ({adapters.dtype})", lifetime="gradients",
            bytes=_ceil(Fraction(adapters.grad * n_train, d)),
            formula=f"{adapters.grad} B × {fmt_int(n_train)}{dt}"))
        if split is not None:
            lines[-1] = _split_line(lines[-1], split, adapters.grad, n_train, st >= 2)

    # ---- optimizer state and master weights -----------------------------------------
    offloaded = x.offload in ("optimizer", "optimizer+params")
    d, dt = div(st >= 1)
    opt = x.optimizer
    per = optimizer_bytes_per_param(opt, adapters.opt_dtype, x.hidden) if opt else None
    if opt == "other" and x.optimizer_states is not None:
        # the repository's own optimizer: the state tensors its class keeps per parameter
        per = Fraction(x.optimizer_states * DTYPE_BYTES[adapters.opt_dtype])
    # every trainable tensor's shape: only Adafactor's state depends on them (a long list)
    shapes = None if x.trainable_shapes is None or opt != "adafactor" else \
        [tuple(int(k) for k in d) for d, c in x.trainable_shapes for _ in range(int(c))]
    exact_factored = None
    if opt == "adafactor" and shapes and n_train and not stage_note:
        # the model's parameter shapes are known: the factored state exactly (a pipeline
        # stage's own tensors are not listed: the per-parameter bound there)
        exact_factored = adafactor_state_elems(shapes)
        per = Fraction(exact_factored * DTYPE_BYTES[adapters.opt_dtype], n_train)
    if opt is None:
        missing.append("optimizer")
        lines.append(LedgerLine(key="optimizer", label="optimizer state", bytes=None,
                                note="unknown: optimizer not known"))
    elif per is None:
        if opt == "adafactor":
            missing.append("hidden")
        lines.append(LedgerLine(key="optimizer", label=f"optimizer state ({opt})", bytes=None,
                                note="unknown: Adafactor's factored state needs hidden"
                                if opt == "adafactor" else f"unknown: no state model for {opt!r}"))
    elif n_train is None:
        lines.append(LedgerLine(key="optimizer", label=f"optimizer state ({opt})", bytes=None,
                                note="unknown: needs trainable_params"))
    else:
        label = OPTIMIZERS[opt][2] if opt in OPTIMIZERS else \
            f"{x.optimizer_states} state tensors per parameter (the optimizer's own class)" \
            if opt == "other" else "Adafactor factored second moment"
        fixed = OPTIMIZERS.get(opt, (0, None, ""))[1]
        dtype = {1: "int8", 4: "fp32"}.get(fixed or 0, adapters.opt_dtype)
        host = _ceil(per * n_train / d)
        if exact_factored is not None:
            formula = f"{DTYPE_BYTES[adapters.opt_dtype]} B × {fmt_int(exact_factored)}{dt}"
            note = ("torch.optim.Adafactor: a row variance (last dimension reduced) and a "
                    "column variance (second-to-last reduced) per matrix, a full variance per "
                    "vector, from the trainable tensors' shapes")
        elif opt == "adafactor":
            formula = f"{DTYPE_BYTES[adapters.opt_dtype]} B × 2 × {fmt_int(n_train)} / {fmt_int(x.hidden)} (h){dt}"
            note = "≈ one value per matrix row and column (upper bound for h×h matrices)"
        else:
            formula = f"{_b(per)} × {fmt_int(n_train)}{dt}"
            if split is not None:
                host, formula = split(per, n_train, st >= 1)
            note = "paged: bitsandbytes may evict it to CPU memory under pressure" \
                if opt.startswith("paged") else ""
            if opt in ("adamw_8bit", "paged_adamw_8bit"):
                note = _join(note, "per-block quantisation constants (≈ 0.2 %) not counted")
        if offloaded:
            lines.append(LedgerLine(key="optimizer", label=f"{label} ({dtype}) — offloaded to CPU",
                                    bytes=0, formula=f"0 (on the host: {formula} = {fmt_int(host)} B)",
                                    note="offload moves the optimizer state to CPU memory"))
        else:
            step = step_line(x, opt) if opt in STEP_TENSOR_OPTIMIZERS else None
            if isinstance(step, str):
                note = _join(note, step)
            lines.append(LedgerLine(key="optimizer", label=f"{label} ({dtype})", bytes=host,
                                    formula=formula, note=note))
            if isinstance(step, LedgerLine):
                lines.append(step)
            tmp = optimizer_temporaries(x, opt, adapters.opt_dtype, n_train, d, dt, split)
            if tmp is not None:
                lines.append(tmp)

    if adapters.master:
        if n_train is None:
            lines.append(LedgerLine(key="master", label="fp32 master weights", bytes=None,
                                    note="unknown: needs trainable_params"))
        else:
            host = _ceil(Fraction(adapters.master * n_train, d))
            formula = f"{adapters.master} B × {fmt_int(n_train)}{dt}"
            if split is not None:
                host, formula = split(adapters.master, n_train, st >= 1)
            if offloaded:
                lines.append(LedgerLine(key="master", label="fp32 master weights — offloaded to CPU",
                                        bytes=0, formula=f"0 (on the host: {formula} = {fmt_int(host)} B)"))
            else:
                lines.append(LedgerLine(key="master", label="master weights (fp32)", bytes=host,
                                        formula=formula, note=p.label))

    # offload of parameters (ZeRO-3 offload_param): the weight partition lives on the host;
    # the all-gather buffers (comm lines) still hold the working layers on the GPU.
    if x.offload == "optimizer+params":
        for i, ln in enumerate(lines):
            if ln.key == "params" and ln.bytes:
                lines[i] = ln.model_copy(update={
                    "label": ln.label + " — offloaded to CPU", "bytes": 0,
                    "formula": f"0 (on the host: {ln.formula} = {fmt_int(ln.bytes)} B)"})
    buf = buffer_line(x, p)
    if buf is not None:
        lines.append(buf)
    return lines, missing


def _split_line(line: LedgerLine, split: Split, b: int, n: int, sharded: bool) -> LedgerLine:
    """A model-state line with the routed experts' share split by expert parallelism."""
    nb, formula = split(b, n, sharded)
    return line.model_copy(update={"bytes": nb, "formula": formula})


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
