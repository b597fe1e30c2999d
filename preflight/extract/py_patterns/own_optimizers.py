"""Optimizers a repository writes itself (GaLore's projected AdamW, Lion, Sophia, Muon, any
`torch.optim.Optimizer` subclass): the optimizer is `other`, and its state per parameter is
read from the class when it is written plainly.

A class is an optimizer when it subclasses an optimizer (a base named `...Optimizer...`
or a class of the vocabulary) or when it defines `step` and its name is made of an
optimizer's words (`NorMuonAndAdam`). A class the reading cannot open (a library's, a
re-export it does not follow) is an optimizer by its name alone when that name ends with a
known optimizer class (`GaLoreAdamW8bit`, `MyLion`) — never the known class itself.

The state: the tensors its methods store per parameter, `state["exp_avg"] =
torch.zeros_like(p)`, counted by key (`step` and non-tensors are left out), when each is
made like the parameter itself (`p`, `p.data`, `p.grad`, or a name bound once to one of
them). A state sized like anything else (a projected gradient, `torch.zeros(rows)`), or
none found, leaves the count unknown, with the reason.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from preflight.facts import spellings
from preflight.lang.python.source import last_name

#: the words optimizer class names are made of
OPTIMIZER_WORDS = re.compile(r"Adam|Muon|Lion|Sophia|SGD|Lamb|LAMB|Adafactor|Shampoo|SOAP|"
                             r"Adagrad|RMSprop|Prodigy|Ranger|Lookahead|Optimizer|Adan|CAME")
#: last names of optimizer classes the vocabulary does not list (the collector offers
#: calls ending so to the optimizer recogniser)
NAME_SUFFIXES = ("Muon", "Sophia", "SophiaG", "Shampoo", "SOAP", "Optimizer", "Prodigy",
                 "Ranger", "Lookahead", "Adan", "CAME")
#: names that hold an optimizer word without being one
NOT_AN_OPTIMIZER = re.compile(r"(Scheduler|Config|Args|Arguments|Hook|Wrapper|Callback|"
                              r"Param(eter)?s?|State|Group|Builder|Factory|Mixin)$")
#: tensor constructors that copy their argument's shape
_LIKE = ("zeros_like", "empty_like", "ones_like", "full_like", "randn_like", "rand_like",
         "clone")
_PARAM_ATTRS = ("data", "grad")


def is_optimizer_class(node: ast.ClassDef) -> bool:
    """Whether a class statement defines an optimizer (see the module's note)."""
    if NOT_AN_OPTIMIZER.search(node.name):
        return False
    for b in node.bases:
        last = last_name(b)
        if last and ("Optimizer" in last or spellings.optimizer_class(last)) and \
                not NOT_AN_OPTIMIZER.search(last):
            return True
    has_step = any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "step"
                   for s in node.body)
    return has_step and OPTIMIZER_WORDS.search(node.name) is not None


def named_like_optimizer(name: str) -> Optional[str]:
    """The known optimizer class a name extends (`GaLoreAdamW8bit` → `AdamW8bit`), for a
    class whose definition cannot be read; None when it names no optimizer or is one."""
    if spellings.optimizer_class(name) or NOT_AN_OPTIMIZER.search(name):
        return None
    base = max((k for k in spellings.OPTIMIZER_CLASSES if name.endswith(k) and len(k) >= 3),
               key=len, default=None)
    return base


def state_count(node: ast.ClassDef) -> tuple[Optional[int], str]:
    """(state tensors per parameter, how it was read) of an optimizer class; None with the
    reason when the count cannot be read."""
    keys: dict[str, int] = {}
    optional: dict[str, str] = {}
    for fn in node.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = _param_names(fn)
        under = _options(fn)
        for st in ast.walk(fn):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1):
                continue
            key = _state_key(st.targets[0])
            if key is None or key == "step":
                continue
            if id(st) in under:
                # kept only with an option (`if amsgrad:`): not counted, said
                optional.setdefault(key, under[id(st)])
                continue
            size = _like_of(st.value)
            if size is None:
                if isinstance(st.value, ast.Call):
                    return None, (f"{node.name} keeps state[{key!r}] built by "
                                  f"`{ast.unparse(st.value)[:60]}` (line {st.lineno}): its size "
                                  f"is not read")
                continue
            if size not in params:
                return None, (f"{node.name} keeps state[{key!r}] sized like `{size}` "
                              f"(line {st.lineno}), not like the parameter: its size is not read")
            keys.setdefault(key, st.lineno)
    if not keys:
        return None, (f"{node.name} stores no `state[...] = torch.zeros_like(p)` the reading "
                      f"can count: its state per parameter is not known")
    names = ", ".join(keys)
    more = "".join(f"; {k} too if `{t}`" for k, t in optional.items() if k not in keys)
    return len(keys), (f"{len(keys)} state tensor{'s' if len(keys) != 1 else ''} per parameter "
                       f"({names}) in {node.name} (line {min(keys.values())}){more}")


def _options(fn: ast.AST) -> dict[int, str]:
    """Statements under an `if` on an option rather than on the state's emptiness
    (`if amsgrad:` vs `if len(state) == 0:`) → the option's test."""
    out: dict[int, str] = {}
    for st in ast.walk(fn):
        if isinstance(st, ast.If) and "state" not in ast.unparse(st.test).lower():
            test = ast.unparse(st.test)[:40]
            for sub in st.body + st.orelse:
                for n in ast.walk(sub):
                    out.setdefault(id(n), test)
    return out


def _state_key(tgt: ast.AST) -> Optional[str]:
    """`state["exp_avg"]` / `self.state[p]["exp_avg"]` → "exp_avg"."""
    if not (isinstance(tgt, ast.Subscript) and isinstance(tgt.slice, ast.Constant)
            and isinstance(tgt.slice.value, str)):
        return None
    return tgt.slice.value if "state" in ast.unparse(tgt.value).lower() else None


def _like_of(value: ast.AST) -> Optional[str]:
    """The text of the tensor a constructor copies the shape of (`torch.zeros_like(p)` →
    "p", `p.grad.clone()` → "p.grad"); None for any other value."""
    if not isinstance(value, ast.Call):
        return None
    f = value.func
    name = last_name(f)
    if name not in _LIKE:
        return None
    if name == "clone" and isinstance(f, ast.Attribute):
        return ast.unparse(f.value)
    if value.args:
        return ast.unparse(value.args[0])
    return None


def _param_names(fn: ast.AST) -> set[str]:
    """Texts that denote a parameter inside a method: the loop variable over a parameter
    group (`for p in group["params"]`), its `.data` / `.grad`, and names bound once to one."""
    loops = set()
    for st in ast.walk(fn):
        if isinstance(st, ast.For) and "param" in ast.unparse(st.iter).lower():
            # `for p in group["params"]`, `for i, p in enumerate(group["params"])`
            targets = st.target.elts if isinstance(st.target, ast.Tuple) else [st.target]
            loops.update(t.id for t in targets[-1:] if isinstance(t, ast.Name))
    out = set(loops) | {f"{p}.{a}" for p in loops for a in _PARAM_ATTRS} | \
        {f"{p}.grad.data" for p in loops}
    bound: dict[str, list[ast.AST]] = {}
    for st in ast.walk(fn):
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(getattr(st, "value", None))
    for name, values in bound.items():
        if len(values) == 1 and values[0] is not None and ast.unparse(values[0]) in out:
            out.add(name)
    return out
