"""One model's config fields counted: the head and the overrides a reference asks for, the
parameter formula's shape (`models.formulas.count`), a script's
`resize_token_embeddings(...)`, and a `[tool.preflight.models]` entry (a count or a table of
config fields)."""

from __future__ import annotations

from typing import Any, Optional

from preflight.models import formulas
from preflight.models.shape import ModelShape, UnsupportedArchitecture
from preflight.plan import Fact, Origin
from preflight.resolve.model_facts import attention_facts, moe_facts
from preflight.resolve.values import (LOADER_KWARGS, SHAPE_FACTS, Resolved, as_int, clean_fields,
                                      shape_facts_from_fields, source_of)


# --------------------------------------------------------------------------- one reference

def head_and_overrides(ref: dict) -> tuple[Optional[str], dict, Optional[int]]:
    kwargs, _ = clean_fields(ref.get("kwargs") or {})
    head = formulas.head_of_class(ref.get("class") or ref.get("loader") or ref.get("auto_class"))
    overrides = {k: v for k, v in kwargs.items() if k not in LOADER_KWARGS}
    num_labels = as_int(overrides.get("num_labels"))
    resize = as_int(ref.get("resize_vocab"))
    if resize:
        overrides["vocab_size"] = resize
    return head, overrides, num_labels


def _resized(res: Resolved, arch: str, cfg: dict, head: Optional[str],
             num_labels: Optional[int], shape: ModelShape) -> ModelShape:
    """The shape after the script's `resize_token_embeddings(...)` (a "resize" ref the
    extractor attached to the model's reference), with the reason said."""
    rs = res.ref.get("resize") if isinstance(res.ref, dict) else None
    if not isinstance(rs, dict) or res.ref.get("resize_vocab") or "text_config" in cfg:
        return shape
    if as_int(rs.get("vocab")):
        new: Optional[int] = as_int(rs.get("vocab"))
        how = f"resize_token_embeddings({new})"
    else:
        mult, added = as_int(rs.get("multiple")) or 1, bool(rs.get("added"))
        new = formulas.resized_vocab(shape.vocab, mult, added)
        if new is None:
            # tokens added (`tokenizer.add_special_tokens(d)`, the count depends on the
            # tokenizer) and the embeddings resized to len(tokenizer): the vocabulary is
            # not known; the count is the base model's, the reason says what it leaves out
            at = f" ({rs['added_at']})" if rs.get("added_at") else ""
            why = (f"{shape.vocab} plus the tokens the script adds to the tokenizer{at}: "
                   f"their number is not known statically")
            res.more.append(("vocab", Fact.unknown(why, source=source_of(rs.get("source")))))
            res.reason = (res.reason + "; " if res.reason else "") + (
                f"without the tokens the script adds{at} ({shape.hidden:,} parameters each "
                f"in the embeddings" + ("" if shape.tied else ", as many in the head") + ")")
            return shape
        how = ("tokens added to the tokenizer" + (f" ({rs['added_at']})" if rs.get("added_at")
                                                 else "") if added else "no token added")
        how += (f", embeddings resized to len(tokenizer) rounded up to a multiple of {mult}"
                if mult > 1 else ", embeddings resized to len(tokenizer)")
    if new is None or new == shape.vocab:
        return shape
    res.reason = (res.reason + "; " if res.reason else "") + f"vocab {shape.vocab} → {new}: {how}"
    return formulas.count(arch, {**cfg, "vocab_size": new}, head=head, num_labels=num_labels)


def shape_for_arch(res: Resolved, arch: Optional[str], cfg: dict, head: Optional[str],
                   num_labels: Optional[int], what: str) -> Resolved:
    if arch is None:
        res.unknown = f"{what}: model_type {cfg.get('model_type')!r} has no parameter formula"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    try:
        shape = formulas.count(arch, cfg, head=head, num_labels=num_labels)
        shape = _resized(res, arch, cfg, head, num_labels, shape)
    except (UnsupportedArchitecture, KeyError, ValueError, TypeError) as e:
        res.unknown = f"{what}: {e}"
        res.shape_facts = shape_facts_from_fields(cfg)
        return res
    res.shape, res.params = shape, shape.params
    res.shape_facts = {k: getattr(shape, k) for k in SHAPE_FACTS
                       if not any(n == k and not f.known for n, f in res.more)}
    res.shape_facts.update(moe_facts(shape))
    res.shape_facts.update(attention_facts(shape))
    res.family = formulas.activation_family(arch, cfg)
    return res


def shape_from_project(res: Resolved, name: str, entry: Any, overrides: dict,
                       head: Optional[str], num_labels: Optional[int]) -> Resolved:
    """A `[tool.preflight.models]` entry: a parameter count, or a table of config fields."""
    res.origin = Origin.PROJECT
    res.reason = f"{name}: [tool.preflight.models] in pyproject.toml"
    n = as_int(entry)
    if n is not None:
        res.params = n
        return res
    if isinstance(entry, dict):
        fields, _ = clean_fields(entry)
        if as_int(fields.get("params")) is not None:
            res.params = as_int(fields["params"])
            res.shape_facts = shape_facts_from_fields(fields)
            return res
        arch = formulas.normalise_arch(str(fields.get("model_type") or
                                           fields.get("arch") or ""))
        if arch is None:
            arch = formulas.arch_of_config(fields)
        return shape_for_arch(res, arch, {**fields, **overrides}, head, num_labels, res.reason)
    res.unknown = f"{name}: [tool.preflight.models] entry is neither a count nor a table"
    return res
