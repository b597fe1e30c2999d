"""Edits in Python scripts with libcst, so that every byte not edited survives: a literal
at the fact's line is replaced in place (a `TrainingArguments(...)` keyword, an argparse
`default=`, an assignment), and a fact the script leaves at a library default gets a new
keyword in the call that reads it (`TrainingArguments(...)`, `from_pretrained(...)`).

A default read from the command line (`HfArgumentParser(...).parse_args_into_dataclasses()`,
`argparse`) is not the script's to change: it is handed back to be written as a flag on
the launcher line that runs the script.
"""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from preflight.fix.edits import FactEdit, Unspellable
from preflight.fix.spelling import NEW_KEYS, render

#: calls whose keywords are TrainingArguments fields
HF_ARGS_CALLS = {"TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig",
                 "ORPOConfig", "KTOConfig", "GRPOConfig", "RewardConfig"}
#: calls that read the script's settings from its command line
CLI_CALLS = {"parse_args_into_dataclasses", "parse_args", "parse_known_args"}


def _name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _literal(v: Any, like: Optional[cst.BaseExpression] = None) -> cst.BaseExpression:
    if isinstance(v, bool):
        return cst.Name("True" if v else "False")
    if isinstance(v, int):
        return cst.Integer(str(v))
    q = '"'
    if isinstance(like, cst.SimpleString):
        q = like.quote if like.quote in ("'", '"') else '"'
    s = str(v).replace("\\", "\\\\").replace(q, "\\" + q)
    return cst.SimpleString(f"{q}{s}{q}")


def _old_value(node: cst.BaseExpression) -> Any:
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    raise Unspellable("not a literal")


class _Apply(cst.CSTTransformer):
    def __init__(self, replace: dict, add: dict):
        self.replace, self.add = replace, add

    def on_leave(self, original, updated):  # type: ignore[override]
        if original in self.replace:
            return self.replace[original]
        if original in self.add and isinstance(updated, cst.Call):
            return _with_keywords(updated, self.add[original])
        return updated


def _with_keywords(call: cst.Call, kws: list[tuple[str, cst.BaseExpression]]) -> cst.Call:
    """The call with keywords appended, laid out like its existing arguments (one per line
    in a call written one per line)."""
    args = list(call.args)
    for key, value in kws:
        new = cst.Arg(keyword=cst.Name(key), value=value,
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
        if not args:
            args.append(new)
            continue
        last = args[-1]
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            sep = args[-2].comma
        else:
            sep = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new = new.with_changes(comma=last.comma)
        args[-1] = last.with_changes(comma=sep)
        args.append(new)
    return call.with_changes(args=args)


def edit_python(text: str, edits: list[FactEdit]) -> tuple[str, list[str], list[FactEdit]]:
    """(new text, notes, edits to make on the launcher line instead)."""
    try:
        # the module is parsed here and used once: no defensive deep copy
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    except cst.ParserSyntaxError as e:
        raise Unspellable(f"the script does not parse: {e.message}") from None
    meta = wrapper.resolve_many([PositionProvider, ParentNodeProvider])
    pos, parents = meta[PositionProvider], meta[ParentNodeProvider]
    at: dict[tuple[int, int], list] = {}
    for node, p in pos.items():
        at.setdefault((p.start.line, p.start.column), []).append(node)
    replace: dict = {}
    add: dict = {}
    notes: list[str] = []
    deferred: list[FactEdit] = []
    for e in edits:
        nodes = at.get((e.source.line, e.source.col - 1), [])
        calls = [n for n in nodes if isinstance(n, cst.Call)]
        if e.new_key and not calls and nodes:
            arg = parents.get(nodes[-1])
            while arg is not None and not isinstance(arg, cst.Arg):
                arg = parents.get(arg)
            call = parents.get(arg) if arg is not None else None
            if isinstance(call, cst.Call):
                calls = [call]
        if calls:
            call = max(calls, key=lambda n: (pos[n].end.line, pos[n].end.column))
            fname = _name(call.func)
            if fname in CLI_CALLS:
                deferred.append(e)
                continue
            site = ("hf_args" if fname in HF_ARGS_CALLS else
                    "from_pretrained" if fname == "from_pretrained" else None)
            key = NEW_KEYS.get(site or "", {}).get(e.fact)
            if key is None:
                raise Unspellable(f"{fname}(...) at line {e.source.line} has no keyword for "
                                  f"{e.fact}")
            if any(isinstance(a.keyword, cst.Name) and a.keyword.value == key for a in call.args):
                raise Unspellable(f"{key}= at line {e.source.line} is not a literal")
            v = render(e.fact, e.value, key)
            if v is None:
                raise Unspellable(f"{key}= cannot say {e.fact} = {e.value}")
            add.setdefault(call, []).append((key, _literal(v)))
            notes.append(f"{key}={v!r} added to {fname}(...) at line {pos[call].start.line}: "
                         f"nothing set it, {fname} read its default")
            continue
        lits = [n for n in nodes if isinstance(n, (cst.Integer, cst.SimpleString, cst.Name))]
        if not lits:
            raise Unspellable(f"no literal at line {e.source.line}, column {e.source.col} "
                              f"for {e.fact}")
        node = lits[0]
        key = _key_of(node, parents)
        old = _old_value(node)
        v = render(e.fact, e.value, key or e.fact, old)
        if v is None:
            raise Unspellable(f"{key or 'the value'} at line {e.source.line} cannot say "
                              f"{e.fact} = {e.value}")
        replace[node] = _literal(v, node)
    new = wrapper.module.visit(_Apply(replace, add)).code if (replace or add) else text
    return new, notes, deferred


def _key_of(node: cst.CSTNode, parents) -> str:
    """The keyword, assignment target or argparse option a literal is the value of."""
    p = parents.get(node)
    if isinstance(p, cst.Arg) and p.keyword is not None:
        if p.keyword.value == "default":
            call = parents.get(p)
            if isinstance(call, cst.Call):
                for a in call.args:
                    if a.keyword is None and isinstance(a.value, cst.SimpleString):
                        return str(a.value.evaluated_value).lstrip("-")
        return p.keyword.value
    if isinstance(p, (cst.Assign, cst.AnnAssign)):
        t = p.targets[0].target if isinstance(p, cst.Assign) else p.target
        if isinstance(t, cst.Name):
            return t.value
        if isinstance(t, cst.Attribute):
            return t.attr.value
    if isinstance(p, cst.DictElement) and isinstance(p.key, cst.SimpleString):
        return str(p.key.evaluated_value)
    return ""
