"""The end of a file: what a script implies where its training API says nothing — settings
named by module-level names, documented comments or argparse flags (nanoGPT style), values
that depend on the world size, and the defaults of a training script without precision /
LoRA / checkpointing settings; the quantization and vocabulary references finished."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional

from preflight.lang.lexicon import script_fact
from preflight.lang.python import UNK, Evaluator, V, plain, unk
from preflight.extract.py_patterns.common import FROZEN, auxiliary, parents
from preflight.extract.py_patterns.vocab import tokens_added

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

#: a comment beside a module-level number that says which setting it is
_COMMENT_FACTS = [
    (re.compile(r"\s*(micro[- _]?batch|batch size per (gpu|device|rank)|per[- ](gpu|device) "
                r"batch)", re.I), "micro_batch"),
    (re.compile(r"\s*(sequence|context) length\b", re.I), "seq_len"),
    (re.compile(r"\s*gradient accumulation steps\b", re.I), "grad_accum"),
]

#: an argparse help text saying the flag is the number of nodes
_NODES_HELP = re.compile(r"\bnumber of (compute |machines? ?/? ?)?nodes\b", re.I)


def nodes_flag(pats: Patterns, ev: Evaluator) -> None:
    """A script flag documented as the number of nodes (`--world-size`, help "number
    of nodes for distributed training", in scripts that spawn one process per GPU
    themselves) gives the nodes the job runs on."""
    for dest, info in ev.argparse.items():
        h = info["kw"].get("help")
        if not (isinstance(h, ast.Constant) and isinstance(h.value, str)
                and _NODES_HELP.search(h.value)):
            continue
        v = ev.arg_value(dest, info["line"], info["col"])
        if v.known and isinstance(v.value, int) and not isinstance(v.value, bool) \
                and v.value >= 1:
            pats.emit("nodes", v, reason=f"--{dest.replace('_', '-')} {v.value}: "
                                         f"{h.value.strip()!r} (the flag's help)")


#: what a script that computes in a precision other than its weights' mentions
_MIXED = re.compile(r"autocast|GradScaler|mixed_precision|precision|\bamp\b|accelerate|"
                    r"deepspeed|lightning|fp16\s*=|bf16\s*=|--fp16|--bf16")
#: what a script that checkpoints activations mentions
_CHECKPOINTING = re.compile(r"gradient_checkpointing|checkpoint_wrapper|activation_checkpointing|"
                            r"utils\.checkpoint|checkpoint_sequential")
#: lines that mention checkpointing without turning it on: a flag's definition, an import
_MENTION_ONLY = re.compile(r"add_argument\(|^\s*(import|from)\s|^\s*(el)?if\b|:\s*bool\b")


#: a cast or a dtype setting a script may make of its weights
_CASTS = re.compile(r"\.half\(|\.bfloat16\(|torch_dtype|set_default_dtype")
#: a line that saves or exports weights: a cast there is of the copy saved
#: (`torch.save({k: v.half() for k, v in model.state_dict().items()}, path)`)
_SAVES = re.compile(r"torch\.save\(|state_dict|save_pretrained|save_file\(|\.save\(")

#: the calls that apply a PEFT adapter config to the trained model
_PEFT_APPLIES = re.compile(r"get_peft_model\(|peft_config\s*=|\.add_adapter\(|"
                           r"PeftModel\.from_pretrained\(|inject_adapter_in_model\(")
#: the same, or a model's own method named for LoRA (`model.wrap_llm_lora(r=…)`): the
#: slower pattern, for a file that says "lora" at all
_APPLIES_ANY_LORA = re.compile(_PEFT_APPLIES.pattern +
                               r"|\b(?:model|net|module)\w*(?:\.\w+)*\.\w*lora\w*\(", re.I)


def _applies_lora(ev: Evaluator) -> re.Pattern:
    """The lines that apply an adapter, as this file can hold them."""
    return _APPLIES_ANY_LORA if re.search("lora", ev.text_for_checks, re.I) else _PEFT_APPLIES


def switched_off(ev: Evaluator, turns_on: re.Pattern = _CHECKPOINTING,
                 mention_only: Optional[re.Pattern] = _MENTION_ONLY,
                 what: str = "checkpointing is turned on") -> Optional[tuple[int, str]]:
    """(line, reason) when every place of the script that would turn a setting on (by
    default activation checkpointing) sits in an `if` arm this launch does not take (`if
    args.gradient_checkpointing:` with the flag not given); None otherwise — a place
    outside those arms, other than a line that only mentions it, or no place at all."""
    found: Optional[tuple[int, str]] = None
    for n, text in enumerate(ev.lines, 1):
        if not turns_on.search(text):
            continue
        arm = next((s for s in ev.skipped if s[0] <= n <= s[1]), None)
        if arm is not None:
            found = found or (n, f"{what} only in an `if` arm this launch does not take: "
                                 f"{arm[2]}")
        elif mention_only is None or not mention_only.search(text):
            return None
    return found


def flag_read_where(ev: Evaluator, dest: str) -> Optional[str]:
    """Where a parsed argument the script reads by attribute (`args.batch_size`) is read,
    when not on the path every launch takes: "skipped" when each read sits in an `if`
    arm this launch does not take; "under `cond`" when each read the evaluator saw is
    inside an arm of an undecided `if`; None otherwise (read on the common path, or never
    read in this file: another module may)."""
    attr = re.compile(rf"\.{re.escape(dest)}\b")
    at = [n for n, text in enumerate(ev.lines, 1) if attr.search(text)
          and "add_argument(" not in text]
    if at and all(any(s[0] <= n <= s[1] for s in ev.skipped) for n in at):
        return "skipped"
    reads = ev.arg_reads.get(dest) or []
    if reads and all(choice for _, choice in reads):
        lines = sorted({n for n, _ in reads})
        return ("in arms of an undecided `if` / `match` (line"
                f"{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:4]))})")
    return None


#: a call of a function named for LoRA on the model (`apply_lora(model)`, `inject_lora(
#: model, rank=8)`), which is not peft's API
_OWN_LORA = re.compile(r"^\s*(?:\w+\s*=\s*)?((?:\w+\.)*(\w*lora\w*)\(\s*(?:self\.)?"
                       r"(?:model|net|module)\w*\b[^)]*\))", re.I)
_PEFT_CALLS = frozenset({"get_peft_model", "loraconfig", "prepare_model_for_kbit_training"})
#: functions named for LoRA that save, load or report adapters rather than apply them
_NOT_APPLYING = re.compile(r"(save|load|print|count|log|merge|unload|export|dump|show|"
                           r"num|get_lora_state)", re.I)


def own_lora(ev: Evaluator) -> Optional[tuple[int, str]]:
    """(line, call) of the first call, outside arms the launch does not take, of a
    function named for LoRA that is handed the model and is not peft's."""
    if not re.search("lora", ev.text_for_checks, re.I):
        return None
    for n, text in enumerate(ev.lines, 1):
        m = _OWN_LORA.match(text)
        if m is None or m.group(2).lower() in _PEFT_CALLS or \
                _NOT_APPLYING.match(m.group(2)) or any(s[0] <= n <= s[1] for s in ev.skipped):
            continue
        return n, m.group(1)[:80]
    return None


def frozen_by_hand(ev: Evaluator) -> Optional[tuple[int, str]]:
    """(line, statement) of the first place the trained model's parameters are frozen by
    hand (`p.requires_grad = False` in a loop over its parameters, `model.vision_tower.
    requires_grad_(False)`), outside arms the launch does not take; None when there is
    none. A reference, teacher or helper network frozen so is not the trained one."""
    tree = getattr(ev, "tree", None)
    if tree is None or "requires_grad" not in ev.text_for_checks:
        return None
    up = parents(ev)
    for node in ast.walk(tree):
        recv = None
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                node.value.value is False:
            recv = next((t.value for t in node.targets if isinstance(t, ast.Attribute)
                         and t.attr == "requires_grad"), None)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "requires_grad_" and node.args and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
            recv = node.func.value
        if recv is None or any(s[0] <= node.lineno <= s[1] for s in ev.skipped):
            continue
        what = ev.src(recv)
        if isinstance(recv, ast.Name):
            # a loop variable: what the loop walks (`for p in model.encoder.parameters()`)
            cur = node
            for _ in range(32):
                cur = up.get(id(cur))
                if cur is None or isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    break
                if isinstance(cur, ast.For) and any(isinstance(t, ast.Name) and t.id == recv.id
                                                   for t in ast.walk(cur.target)):
                    what = ev.src(cur.iter)
                    break
        if FROZEN.search(what.lower()) or auxiliary(what):
            continue
        return node.lineno, ev.src(node)[:80]
    return None


def unapplied_lora(pats: Patterns, ev: Evaluator) -> None:
    """A LoRA config built but applied to the model only in an arm the launch does not
    take (`if args.use_lora: model = get_peft_model(model, config)`): no adapter."""
    if not pats.lora_refs and not any(n == "lora" and v.known and v.value
                                      for n, v, tier, _ in pats.facts):
        return
    off = switched_off(ev, _applies_lora(ev), None, "the adapter config is applied to the model")
    if off is None:
        return
    pats.facts = [f for f in pats.facts if f[0] not in ("lora", "trainable_params")]
    pats.lora_refs.clear()
    pats.emit("lora", V(None, "default", off[0], 1, off[1]))


def finish(pats: Patterns, ev: Evaluator) -> None:
    """Fallbacks: module-level config names (nanoGPT style), hand-written attention,
    what a training script without any precision/LoRA/checkpointing setting implies."""
    if pats.saw_training_args:
        # with a Trainer, the batch per device is TrainingArguments'; a DataLoader built
        # in the script feeds evaluation or a custom loop on the side
        pats.facts = [(n, v, "hint" if tier == "dataloader" else tier, x)
                      for n, v, tier, x in pats.facts]
    have = {n for n, v, tier, _ in pats.facts if tier not in ("fallback", "hint") and v.known}
    have_any = {n for n, _, tier, _ in pats.facts if tier not in ("fallback", "hint")}
    # a name's value is no fallback for a setting the script makes, unknown, at the API
    # (`DataLoader(batch_size=args.batch_size)` after `args.batch_size //= ngpus`)
    said = have_any
    for gname, val in ev.globals.items():
        if not isinstance(val, V):
            continue
        fact = script_fact(gname)
        if fact is None or fact in said:
            continue
        if val.known and not isinstance(val.value, (int,)) or isinstance(val.value, bool):
            continue
        if val.known and val.value is None:
            continue
        pats.emit(fact, val, tier="global")
        have.add(fact)
        said.add(fact)
    # a short name the script documents in its comment (`B = 64  # micro batch size`)
    for gname, val in ev.globals.items():
        if not (isinstance(val, V) and val.known and isinstance(val.value, int)) or \
                isinstance(val.value, bool) or val.path or not 0 < val.line <= len(ev.lines):
            continue
        text = ev.lines[val.line - 1]
        if not re.match(rf"\s*{re.escape(gname)}\s*=", text) or "#" not in text:
            continue
        comment = text.split("#", 1)[1]
        for rx, fact in _COMMENT_FACTS:
            if fact not in said and rx.match(comment):
                pats.emit(fact, val, tier="global",
                          reason=f"{gname} = {val.value}: #{comment.rstrip()}")
                have.add(fact)
                said.add(fact)
    argp = {d: ev.arg_final(d) for d in list(ev.argparse_order) + [
                d for d in ev.args_set if d not in ev.argparse]
            if script_fact(d)}
    fields = ev.config_fields()
    unknown_fields = {id(v) for _, v in fields if not v.known}
    for lname, val in list(ev.local_config.items()) + list(argp.items()) + fields:
        for fact in filter(None, (script_fact(lname),)):
            if fact in said:
                continue
            if lname in argp and lname not in ev.args_set:
                where = flag_read_where(ev, lname)
                if where == "skipped":
                    continue          # read only in arms this launch does not take
                if where is not None:
                    # read only inside arms of an undecided `if`: whether the job uses
                    # the flag at all is not known
                    shown = repr(val.value) if val.known else "unknown"
                    u = unk(f"args.{lname} ({shown} here) is read only {where}: whether the "
                            f"job uses it is not known statically", val.line, val.col,
                            {"alternatives": [plain(val)]} if val.known else None)
                    pats.emit(fact, u, tier="global")
                    have.add(fact)
                    said.add(fact)
                    continue
            if not val.known and (lname in argp and lname in ev.args_set or
                                  id(val) in unknown_fields):
                # `args.x = ...` under a condition the launch may not take, or a config
                # field a file not known statically may set: said unknown, never the
                # flag's default
                pats.emit(fact, val, tier="global")
                have.add(fact)
                said.add(fact)
                continue
            if not val.known or not isinstance(val.value, int) or isinstance(val.value, bool):
                continue
            pats.emit(fact, val, tier="global")
            have.add(fact)
            said.add(fact)
    nodes_flag(pats, ev)
    if "grad_accum" in pats.pending and "grad_accum" not in have:
        pass
    for key, info in pats.pending.items():
        fact = script_fact(key)
        if fact:
            info["fact"] = fact
        by = info.get("by") or ""
        m = re.search(r"environment variable (\w+)", by)
        if m:
            info["env"] = m.group(1)      # e.g. WORLD_SIZE: known once the launcher is
        ev.pending_out[key] = info
    bits = min((q["bits"] for q in pats.quant if not q.get("choices")), default=16)
    chosen = [q for q in pats.quant if q.get("choices")]
    if bits == 16 and chosen:
        # a quantisation config built only in an arm of an undecided `if`
        # (`if model_args.load_in_4bit:`): the adapter's base bits are not known
        why = f"the base is quantised only if {chosen[0]['choices'][-1]}, not known statically"
        for ref in pats.lora_refs:
            ref["base_bits"] = {"unknown": why}
        pats.facts = [(n, unk(f"lora: {why}", v.line, v.col)
                       if n == "lora" and v.known and isinstance(v.value, dict) else v, t, w)
                      for n, v, t, w in pats.facts]
    if bits != 16:
        for ref in pats.lora_refs:
            ref["base_bits"] = bits
        for _, v, _, _ in pats.facts:
            if isinstance(v.value, dict) and "base_bits" in v.value and "r" in v.value:
                v.value["base_bits"] = bits
    for q in pats.quant:
        q.pop("obj", None)
    if pats.resize is not None:
        if "multiple" in pats.resize:
            added = tokens_added(pats, ev)
            pats.resize["added"] = added is not None
            if added is not None:
                pats.resize["added_at"] = f"{added[0]}:{added[1]}"
        pats.model_refs.append(pats.resize)
    unapplied_lora(pats, ev)
    if not pats.seen_training_api and not have:
        return
    line, col = 1, 1
    have |= have_any
    if "optimizer" in have or pats.seen_training_api:
        if "lora" not in have and not pats.lora_refs:
            off = switched_off(ev, _applies_lora(ev), None, "an adapter is applied to the model")
            if off is not None:
                # `if args.use_lora: model = get_peft_model(...)` with the switch off: the
                # adapter's config was never built either, and no adapter trains
                pats.emit("lora", V(None, "default", off[0], 1, off[1]), tier="fallback")
            elif own_lora(ev) is not None:
                # the repository's own adapter applied to the model (`apply_lora(model)`):
                # its modules are not read, and no "no adapter found" stands for them
                at, call = own_lora(ev)
                why = (f"`{call}` applies an adapter of the repository's own (not peft's): "
                       f"its size is not read")
                pats.emit("lora", unk(why, at, 1), tier="overrules")
                pats.emit("trainable_params", unk(why, at, 1), tier="overrules_defaults")
            elif re.search(r"peft|lora", ev.text_for_checks, re.I):
                pats.emit("lora", unk("the script mentions PEFT/LoRA but its settings are "
                                      "made outside this file", line, col), tier="fallback")
            else:
                pats.emit("lora", V(None, "default", line, col,
                                    "no LoRA / PEFT configuration in the script"),
                          tier="fallback")
        frozen = frozen_by_hand(ev) if not pats.lora_refs and "lora" not in have else None
        if frozen is None and pats.frozen_at is not None and not pats.lora_refs and \
                "lora" not in have:
            # a freeze the evaluator ran in a module it followed (`train()` of a package)
            frozen = pats.frozen_at
        if frozen is not None and own_lora(ev) is None:
            # parameters frozen by hand, no adapter: not every parameter trains (a count
            # derived from what the job is known to train still stands)
            pats.emit("trainable_params", V(
                UNK, "unknown", frozen[0], 1,
                f"the script freezes parameters by hand (`{frozen[1]}`): which of them "
                f"train is not read", None, frozen[2] if len(frozen) > 2 else None),
                tier="overrules_defaults")
        if "activation_checkpointing" not in have and not _CHECKPOINTING.search(
                ev.text_for_checks):
            pats.emit("activation_checkpointing",
                      V("none", "default", line, col,
                        "no gradient checkpointing found in the script"), tier="fallback")
        elif "activation_checkpointing" not in have_any:
            off = switched_off(ev)
            if off is not None:
                pats.emit("activation_checkpointing", V("none", "default", off[0], 1, off[1]),
                          tier="fallback")
        # a script that mentions precision settings the evaluator did not reach (an
        # early return, code behind an unknown call) gets no "none" default
        mentions_precision = re.search(r"bf16|fp16|float16|half\(|autocast|mixed_precision",
                                       ev.text_for_checks)
        if not pats.saw_precision and "mixed_precision" not in have and not mentions_precision:
            pats.emit("mixed_precision", V("none", "default", line, col,
                                           "no autocast / mixed-precision setting found in "
                                           "the script"), tier="fallback")
        elif "mixed_precision" not in have_any and pats.autocast_at is None and \
                not _MIXED.search(ev.text_for_checks):
            cast = next((v for n, v, tier, _ in pats.facts if n == "model_cast" and v.known), None)
            loaded = next((v for n, v, tier, _ in pats.facts if n == "param_dtype" and v.known
                           and v.value in ("bf16", "fp16")), None)
            if cast is not None:
                # the weights are cast as a whole (`model.to(torch.bfloat16)`) and nothing
                # computes in another precision: pure half precision, no mixed precision
                pats.emit("mixed_precision", V("none", "default", cast.line, cast.col,
                                               "the model is cast as a whole and the script "
                                               "has no autocast / GradScaler / mixed-precision "
                                               "setting"), tier="fallback")
            elif loaded is not None and not pats.trainers:
                # loaded in half precision (`from_pretrained(..., torch_dtype=torch.bfloat16)`)
                # and nothing computes in another precision: pure half precision
                pats.emit("mixed_precision", V("none", "default", loaded.line, loaded.col,
                                               f"the weights are {loaded.value} and the script "
                                               f"has no autocast / GradScaler / "
                                               f"mixed-precision setting"), tier="fallback")
        if pats.autocast_at is not None and "param_dtype" not in have_any and \
                not any(_CASTS.search(ln) and not _SAVES.search(ln) for ln in ev.lines):
            # autocast computes in half precision over the weights the model was built
            # with; nothing in the script casts them
            pats.emit("param_dtype", V("fp32", "default", *pats.autocast_at,
                                       "torch autocast over a model built in fp32 (no cast "
                                       "of the weights in the script)"), tier="fallback")
        if not pats.saw_precision and "param_dtype" not in have and not mentions_precision:
            pats.emit("param_dtype", V("fp32", "default", line, col,
                                       "no half-precision weights found in the script"),
                      tier="fallback")
        if "grad_accum" not in have and "grad_accum" not in pats.pending and \
                pats.saw_optimizer_step and "micro_batch" in have:
            pats.emit("grad_accum", V(1, "default", line, col,
                                      "no gradient accumulation found in the script"),
                      tier="fallback")
