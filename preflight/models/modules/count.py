"""The counter's entry points: the parameters of a class (`count_modules`), the module
tree it builds for a reading of its `forward` (`build_modules`), the model an expression
builds (`count_expression`), the `nn.Module` classes of a file (`module_classes`), and
every parameter of a module tree once (`distinct_params`)."""

from __future__ import annotations

import ast
from typing import Any, Iterator, Optional

from preflight.models.modules.evaluator import Evaluator
from preflight.models.modules.values import (CONFIG, Abort, ClassRef, CompUnknown, Mod, ModuleLike,
                                             Unknown)


def distinct_params(root: Mod) -> Iterator[Any]:
    """Every parameter of the module tree once (a shared module or a tied weight counts
    once, as `nn.Module.parameters()` yields it)."""
    seen: set[int] = set()
    visited: set[int] = set()
    stack = [root]
    while stack:
        m = stack.pop()
        if id(m) in visited:
            continue
        visited.add(id(m))
        for p in m.params.values():
            if id(p) not in seen:
                seen.add(id(p))
                yield p
        stack.extend(m.children.values())


def _total(root: Mod) -> tuple[Any, list[str]]:
    numels = [p.numel for p in distinct_params(root)]
    known = all(isinstance(n, int) for n in numels)
    return (sum(numels) if known else None), []


def count_modules(module: ModuleLike, class_name: str, config: Optional[dict] = None, *,
                  args: Optional[list] = None, kwargs: Optional[dict] = None
                  ) -> tuple[Optional[int], list[str]]:
    """Parameters of `class_name(*args, **kwargs)` defined in `module`, built with `config`.

    `config` holds the resolved config fields (the object its `__init__` reads as
    `config.x`). Returns (count or None, unknown pieces with their lines). A count of None
    always comes with at least one unknown piece saying why.
    """
    n, pieces, _ = build_modules(module, class_name, config, args=args, kwargs=kwargs)
    return n, pieces


def build_modules(module: ModuleLike, class_name: str, config: Optional[dict] = None, *,
                  args: Optional[list] = None, kwargs: Optional[dict] = None
                  ) -> tuple[Optional[int], list[str], Optional[tuple[Mod, dict]]]:
    """`count_modules`, and the module tree built with the module's classes (name → `ast`
    ClassDef), for a reading of its `forward` (also when the count is not known, for the
    attributes its `__init__` set; None when the class could not be built)."""
    try:
        ev = Evaluator(module, config)
    except Exception as e:  # a module that does not parse
        return None, [f"cannot read the module: {e}"], None
    if class_name not in ev.classes:
        return None, [f"class {class_name!r} is not defined in this file"], None
    cls = ev.classes[class_name]
    def conv1(a: Any) -> Any:
        if a is CONFIG:
            return ev.config
        if isinstance(a, str) and a in ev.classes and a != class_name:
            return ClassRef(a, ev.classes[a])
        return a
    conv = [conv1(a) for a in args or []]
    kwargs = {k: conv1(v) for k, v in (kwargs or {}).items()}
    try:
        root = ev.instantiate(ClassRef(class_name, cls), conv, dict(kwargs or {}), cls)
    except Abort as e:
        return None, [*ev.pieces, f"{class_name}: {e}"], None
    except CompUnknown as e:
        return None, [*ev.pieces, str(e)], None
    except Exception as e:  # never a traceback for odd code
        return None, [*ev.pieces, f"{class_name}: construct not modelled ({type(e).__name__}: {e})"], None
    total, _ = _total(root)
    if ev.fatal:
        total = None
    if total is None:
        # the tree is still returned: the attributes its __init__ set (`self.vocab_size`)
        # say its shape when its count is not known
        return (None, ev.pieces or [f"{class_name}: a parameter size is not known"],
                (root, dict(ev.classes)))
    return total, ev.pieces, (root, dict(ev.classes))


def module_classes(module: ModuleLike) -> list[str]:
    """Names of the nn.Module subclasses defined at the top level of `module`."""
    try:
        ev = Evaluator(module, {})
    except Exception:
        return []
    return [n for n, c in ev.classes.items() if ev._is_module_class(c)]


def count_expression(module: ModuleLike, expression: str, config: Optional[dict] = None
                     ) -> tuple[Optional[int], list[str]]:
    """Parameters of the model an expression builds in `module`'s scope.

    `expression` is Python source such as `"ResNet(Bottleneck, [3, 4, 6, 3])"` or
    `"create_model()"` (a factory function defined in the module).
    """
    try:
        node = ast.parse(expression.strip(), mode="eval").body
        ev = Evaluator(module, config)
        # the expression's own nodes have no line in the module
        ev.foreign = {id(n): expression.strip() for n in ast.walk(node)}
        value = ev._eval(node, {})
    except Abort as e:
        return None, [f"{expression}: {e}"]
    except Exception as e:
        return None, [f"{expression}: not understood ({type(e).__name__}: {e})"]
    if not isinstance(value, Mod):
        reason = value.reason if isinstance(value, Unknown) else "it does not build a module"
        return None, [*ev.pieces, f"{expression}: {reason}"]
    total, _ = _total(value)
    if ev.fatal or total is None:
        return None, ev.pieces or [f"{expression}: a parameter size is not known"]
    return total, ev.pieces
