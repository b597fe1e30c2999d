"""Python training scripts, read statically (never imported or executed).

`extract(path, text, args)`:

1. a cheap text pre-check: a file that mentions no training API is not analysed further;
2. the stdlib `ast` tree (C parser; exact line/column on every node) is interpreted by the
   static evaluator (`preflight.lang.python`) with the script's command-line `args`, and
   the training patterns (`py_patterns/`, with the frameworks' idioms in their adapters)
   turn what it sees into facts;
3. what later stages need from the tree is taken from it now: the top-level class names
   (`extras["classes"]`), the places that size memory as `numel() * 4`
   (`extras["numel_times_four"]`, for PF103) and a DeepSpeed dict written in the script
   (`extras["script_deepspeed"]`). The extraction is plain data, so it can be cached,
   but for one thing kept in memory only: the `ast` tree of a script that builds a model
   class it defines (`extras["tree"]`), which the model counter (`models.modules`) walks.
   `syntax_tree` hands the counter a file's tree: that one, else parsed once on first use
   (a file served from the cache, or a helper module that defines the model class).

Why `ast` for the analysis: a libcst parse is ~20× slower than `ast.parse`, a plain visit
of the libcst tree costs more than the parse itself, and `PositionProvider` ~2×; positions
from `ast` are free. libcst is used only to tell syntax newer than the running Python
from a syntax error, on a file `ast` rejects. The whole extraction stays within 1.5× a
bare libcst parse (`bench/speed.py`).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
from typing import Any, Optional

from preflight.extract.reading import read_text, stats
from preflight.lang import pyconfig
from preflight.lang.python import V, Evaluator, Hooks, plain
from preflight.lazy import lazy
from preflight.noqa import noqa_lines
from preflight.plan import Diagnostic, Extraction, Fact, Origin, Source

cst_parse = lazy("preflight.extract.cst_parse")
ds_pydict = lazy("preflight.extract.ds_pydict")
numel = lazy("preflight.extract.numel")
pyconfig_file = lazy("preflight.extract.pyconfig_file")

#: a file must mention one of these to be analysed (cheap substring pre-check)
_TRAINING_API = re.compile(
    r"torch|transformers|trl\b|peft|accelerate|deepspeed|lightning|DataLoader|from_pretrained|"
    r"optim|batch_size|TrainingArguments|autocast|jax|flax|block_size|gradient_accumulation|submitit|"
    # a thin entry script handing the command line to a function of another module
    r"\bFire\(|typer\.run|\bCLI\(|\bauto_cli\(|^from [\w.]+ import (\w+, )*main\b", re.M)
_ORIGINS = {o.value: o for o in Origin}
_DROP_IF_API = ("fallback", "hint", "global")


#: `from pkg.train import train` (names in brackets or not, `as` renames)
_IMPORT_FROM = re.compile(r"^from\s+([\w.]+)\s+import\s+\(?([\w,\s]+?)\)?\s*$", re.M)
#: the names of a function that is the training run itself
_ENTRY_NAMES = re.compile(r"main|train|run|finetune|fine_tune|pretrain|launch|cli|"
                          r"train_\w*model|run_\w+")
#: a thin entry script is short: a module that long is read by its own words
_THIN_ENTRY_BYTES = 8_000


def _thin_entry(text: str) -> bool:
    """A short entry script that calls, at its top level or under its `__main__` guard, a
    function it imports from a module that is not the standard library's (LLaVA's
    `from llava.train.train import train` then `train(attn_implementation=...)`): the
    training is in that module, which the evaluator follows."""
    if len(text) > _THIN_ENTRY_BYTES:
        return False
    for m in _IMPORT_FROM.finditer(text):
        if m.group(1).split(".")[0] in sys.stdlib_module_names:
            continue
        for item in m.group(2).split(","):
            orig = item.split(" as ")[0].strip()
            name = item.split(" as ")[-1].strip()
            # the function is the entry's training itself by its name (`train`, `main`,
            # `finetune`, …); a helper named otherwise (`train_from_yaml`) hands a document
            # to a framework its adapter reads
            if _ENTRY_NAMES.fullmatch(orig) and name.isidentifier() and re.search(
                    rf"^(?:\s{{4}}|\t)?{re.escape(name)}\(", text, re.M):
                return True
    return False


def mentions_training_api(text: str) -> bool:
    return _TRAINING_API.search(text) is not None or _thin_entry(text)


def _read_file(path: str) -> Optional[str]:
    text, diag = read_text(path)
    return text


def extract(path: str, text: str, args: Optional[list[str]] = None,
            env: Optional[dict] = None) -> Extraction:
    # No garbage-collection policy here: a library function leaves the collector alone.
    # `preflight check` pauses it for the whole check (`pipeline.gc_paused`).
    try:
        return _extract(path, text, args, env)
    except (RecursionError, MemoryError) as e:
        return Extraction(path=path, kind="python", text=text, diagnostics=[Diagnostic(
            code="PF003", name="unresolved-value", severity="info",
            message=f"file too deeply nested to analyse ({type(e).__name__})", path=path,
            line=1, col=1)])
    except Exception as e:  # noqa: BLE001 - one file's surprise must not stop the others
        if os.environ.get("PREFLIGHT_DEBUG"):
            raise
        return Extraction(path=path, kind="python", text=text, diagnostics=[Diagnostic(
            code="PF003", name="unresolved-value", severity="warning",
            message=f"the Python extractor failed on this file ({type(e).__name__}: {e}); "
                    "its facts are missing", path=path, line=1, col=1)])


#: larger Python files are generated code or data, not training scripts: reported, not read
MAX_ANALYSED_BYTES = 2_000_000
#: above this a file `ast` rejects is not handed to libcst to tell newer syntax from an
#: error (a libcst parse costs ~5 s per MB)
MAX_MODULE_BYTES = 512_000


def _extract(path: str, text: str, args: Optional[list[str]],
             env: Optional[dict] = None) -> Extraction:
    ext = Extraction(path=path, kind="python", text=text)
    if len(text) > MAX_ANALYSED_BYTES:
        ext.diagnostics.append(Diagnostic(
            code="PF001", name="unreadable-file", severity="warning",
            message=f"{len(text) / 1e6:.1f} MB of Python is generated code or data, not a "
                    f"training script; not analysed (limit {MAX_ANALYSED_BYTES / 1e6:.0f} MB)",
            path=path, line=1, col=1))
        ext.extras["skipped"] = "too large"
        return ext
    ext.noqa = noqa_lines(text)
    if pyconfig.looks_like_config(text) and pyconfig.is_config_module(text):
        # a config module (`model = dict(...)`, `_base_ = [...]`, LazyConfig): a document
        # its framework's loader reads, not a script
        out = pyconfig_file.extract(path, text, args)
        out.noqa = ext.noqa
        return out
    if not text.strip() or not mentions_training_api(text):
        ext.extras["skipped"] = "no training API mentioned"
        return ext
    try:
        tree = parse(text)
    except SyntaxError as e:
        line = e.lineno or 1
        col = e.offset or 1
        newer, refused = False, None
        if "too many nested parentheses" in (e.msg or ""):
            refused = "no Python version parses it"   # CPython's limit, in every version
        elif len(text) <= MAX_MODULE_BYTES:
            newer, refused = _newer_syntax(text)
        if newer:
            # valid for libcst's grammar (newer Python than the one running preflight)
            import sys
            ext.diagnostics.append(Diagnostic(
                code="PF003", name="unresolved-value", severity="info",
                message=f"syntax newer than Python {sys.version_info[0]}.{sys.version_info[1]} "
                        f"({e.msg}); facts not extracted — run preflight on a newer Python",
                path=path, line=line, col=max(col, 1)))
            return ext
        why = f" ({refused})" if refused else ""
        ext.diagnostics.append(Diagnostic(
            code="PF002", name="syntax-error", severity="error",
            message=f"cannot parse Python: {e.msg}{why}", path=path, line=line,
            col=max(col, 1)))
        return ext
    except (ValueError, MemoryError, RecursionError) as e:   # NUL bytes, absurd nesting
        ext.diagnostics.append(Diagnostic(
            code="PF002", name="syntax-error", severity="error",
            message=f"cannot parse Python: {e}", path=path, line=1, col=1))
        return ext

    # here: a package (lazy() would load it), which the walk's worker does not need
    from preflight.extract.py_patterns import (LIB_DATACLASSES, LIB_FIELD_TYPES, Patterns,
                                               library_defaults)

    lines = text.splitlines()
    pats = Patterns(path)
    # what the evaluator is handed rather than imports: the run's shared parse (for the
    # modules it follows into) and the library arguments dataclasses the adapters know
    hooks = Hooks(parse=parse, lib_dataclasses=LIB_DATACLASSES, library_defaults=library_defaults,
                  lib_field_types=LIB_FIELD_TYPES)
    ev = Evaluator(path, tree, args, pats, read_file=_read_file, lines=lines, env=env, hooks=hooks)
    pats.ev = ev     # the choices around each setting it records
    ev.pending_out = {}
    ev.text_for_checks = text
    try:
        ev.run()
    except RecursionError:
        ext.diagnostics.append(Diagnostic(
            code="PF003", name="unresolved-value", severity="info",
            message="expressions nested too deeply to evaluate; facts may be missing",
            path=path, line=1, col=1))
    pats.finish(ev)

    ext.facts = _facts(path, pats, lines)
    for name, fact in ext.facts:
        if not fact.known and fact.source is not None:
            ext.diagnostics.append(Diagnostic(
                code="PF003", name="unresolved-value", severity="info",
                message=f"{name}: {fact.reason or 'not known statically'}",
                path=fact.source.path, line=fact.source.line, col=fact.source.col,
                fix=f"give the command that launches the job after `--`, or supply it: "
                    f"--set {name}=VALUE",
                data={"fact": name}))
    for line, col, msg in ev.notes:
        ext.diagnostics.append(Diagnostic(code="PF003", name="unresolved-value",
                                          severity="info", message=msg, path=path,
                                          line=line, col=col))
    ext.references = list(dict.fromkeys(ev.references))
    ext.extras["model_refs"] = pats.model_refs + pats.lora_refs
    if pats.fused_loss:
        ext.extras["fused_loss"] = pats.fused_loss
    if pats.own_optimizer:
        # the job's `--optim` flag is not what runs (assemble drops its reading)
        ext.extras["own_optimizer"] = True
    if pats.saw_training_args:
        # TrainingArguments (or a subclass) is built: the HF Trainer fills DeepSpeed "auto"
        ext.extras["trainer_args"] = True
    if pats.quant:
        ext.extras["quantization"] = pats.quant
    if ev.pending_out:
        ext.extras["world_size_dependent"] = ev.pending_out
    ext.extras["names"] = _names(ev)
    # names the script leaves unknown (`batch_size = 3`, then set under an undecided `if`):
    # a notebook's `{batch_size}` in a `!` line is not the first value written
    ext.extras["names_unknown"] = sorted(k for k, v in ev.globals.items()
                                         if isinstance(v, V) and not v.known)
    ext.extras["classes"] = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    if set(ext.extras["classes"]) & {r.get("class") for r in ext.extras["model_refs"]
                                     if isinstance(r, dict)}:
        # the script builds a model class it defines: the model counter walks this tree
        ext.extras["tree"] = tree
    if "numel" in text:
        ext.extras["numel_times_four"] = [(line, _col(lines, line, col))
                                          for line, col in numel.numel_times_four(tree, text)]
    if "zero_optimization" in text or "train_micro_batch_size_per_gpu" in text:
        # a DeepSpeed dict in the script: read now, while the tree is at hand (assemble
        # uses it for the job's entry script)
        ext.extras["script_deepspeed"] = ds_pydict.deepspeed_dict_facts(path, tree, args)
    unused = [a for a in _cli_names(ev) if a not in ev.used_cli]
    if unused:
        ext.extras["unused_args"] = unused
    return ext


@functools.lru_cache(maxsize=64)
def parse(text: str) -> ast.Module:
    """`ast.parse(text)`, once per text and process: the extraction, the model counter, a
    module the evaluator follows and the fix writer all ask for the same scripts' trees.
    The trees are shared: nothing may change them. Raises SyntaxError (and ValueError for a
    NUL byte) as `ast.parse` does."""
    stats["ast_parses"] += 1
    return ast.parse(text)


def syntax_tree(ext: Extraction) -> Any:
    """The text and `ast` tree of a Python file's extraction, as a `models.modules.Code`,
    for the model counter: the tree the extraction parsed when it kept it, else parsed on
    first use and kept on the extraction (in memory only); None when the file cannot be
    read or parsed."""
    # here: the nn.Module counter (a package) only when a class is counted
    from preflight.models.modules import Code
    text = ext.text if ext.text is not None else read_text(ext.path)[0]
    if text is None:
        return None
    tree = ext.extras.get("tree")
    if tree is None and "tree" not in ext.extras:
        if len(text) <= MAX_ANALYSED_BYTES:
            stats["ast_reparses"] += 1     # asked again (a file served from the cache)
            try:
                tree = parse(text)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                tree = None
        ext.extras["tree"] = tree
    return Code(text, tree) if tree is not None else None


def _newer_syntax(text: str) -> tuple[bool, Optional[str]]:
    """Of a text `ast` rejects: (True, None) when libcst's grammar accepts it (syntax
    newer than the running Python), (False, why) when the text is too deeply nested to hand
    to libcst's native parser (`cst_parse`), (False, None) when libcst rejects it too."""
    stats["libcst_parses"] += 1
    try:
        cst_parse.parse_module(text)
        return True, None
    except cst_parse.TooDeep as e:
        return False, str(e)
    except Exception:  # noqa: BLE001 - libcst raises several error types
        return False, None


def _cli_names(ev: Any) -> list[str]:
    return [k for k in ev.cli_opts]


def _names(ev: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in ev.globals.items():
        if isinstance(v, V) and v.known and isinstance(v.value, (int, float, str, bool, list,
                                                                 tuple, dict, type(None))):
            out[k] = plain(v)
    return out


def _col(lines: list[str], line: int, col: int) -> int:
    """ast columns are UTF-8 byte offsets + 1; Source columns count characters."""
    if 1 <= line <= len(lines):
        s = lines[line - 1]
        if not s.isascii():
            return len(s.encode()[: col - 1].decode("utf-8", "replace")) + 1
    return col


def _call_in(x: Any, depth: int = 0) -> Optional[str]:
    """The callee of an evaluator object left in a plain value (`{"call": "Foo", …}`)."""
    if depth > 8:
        return None
    if isinstance(x, dict):
        if isinstance(x.get("call"), str):
            return x["call"]
        return next((c for c in (_call_in(v, depth + 1) for v in x.values()) if c), None)
    if isinstance(x, list):
        return next((c for c in (_call_in(v, depth + 1) for v in x) if c), None)
    return None


def _facts(path: str, pats: Any, lines: list[str]) -> list[tuple[str, Fact]]:
    api = {n for n, _, tier, _ in pats.facts if tier not in _DROP_IF_API}
    out: list[tuple[str, Fact]] = []
    seen: set = set()
    for name, v, tier, _ in pats.facts:
        if tier in ("fallback", "hint") and name in api:
            continue
        src_path = v.path or path
        col = _col(lines, v.line, v.col) if v.path in (None, path) else v.col
        src = Source(path=src_path, line=v.line, col=col) if v.line else None
        if not v.known:
            d = v.default
            fact = Fact.unknown(v.reason or "not known statically", source=src,
                                default=plain(d) if d is not None else None)
            if tier == "overrules":
                # the script itself sets this, to a value known only at run time: it
                # overrules what a launcher or config would otherwise fix (plan.merge)
                fact = fact.model_copy(update={"over": Origin.LITERAL})
            elif tier == "overrules_defaults":
                # what the script does makes a default ("every parameter trains") untrue;
                # a count derived from what is known of it still stands
                fact = fact.model_copy(update={"over": Origin.DERIVED})
        elif _call_in(plain(v)):
            # an object built at run time is not a value a fact can hold
            fact = Fact.unknown(f"{_call_in(plain(v))}(...) is built when the script runs",
                                source=src)
        else:
            origin = _ORIGINS.get(v.origin, Origin.DERIVED)
            fact = Fact(value=plain(v), origin=origin, source=src, reason=v.reason)
        key = (name, repr(fact.value), fact.origin, str(src))
        if key in seen:
            continue
        seen.add(key)
        out.append((name, fact))
    return out
