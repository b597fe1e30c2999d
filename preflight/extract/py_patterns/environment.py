"""What a script asks of the machine and its command line: environment variables, platform
probes (fixed on the GPUs preflight sizes jobs for), paths of the job's checkout, and the
namespace of an argparse parser."""

from __future__ import annotations

import os.path
from typing import TYPE_CHECKING, Any, Optional

from preflight import runcache
from preflight.lang.python import ArgsNS, Evaluator, Obj, V, plain, unk
from preflight.frameworks import NO_MATCH, Call, answers
from preflight.safe_read import within

if TYPE_CHECKING:
    from preflight.extract.py_patterns.collector import Patterns

#: platform probes whose answer is fixed on the GPUs preflight sizes jobs for (NVIDIA CUDA,
#: AMD ROCm, which torch also reports as `cuda`)
_PLATFORM_PROBES = {"torch.cuda.is_available": True, "torch.xpu.is_available": False,
                    "torch.backends.mps.is_available": False, "torch.mps.is_available": False,
                    "transformers.is_torch_xpu_available": False,
                    "transformers.is_torch_npu_available": False,
                    "transformers.utils.is_torch_xpu_available": False,
                    "transformers.utils.is_torch_npu_available": False,
                    "accelerate.utils.is_xpu_available": False,
                    "accelerate.utils.is_npu_available": False,
                    "accelerate.utils.is_mps_available": False}


def _artifact_exists(ev: Evaluator, path: str, line: int, col: int) -> Optional[V]:
    """`os.path.exists("data/x/meta.pkl")` for a file of the job's checkout: true when it is
    there; when it is not, unknown if a script beside it names it (a data-preparation step
    writes it before training), false if none does. None (an opaque call) for paths outside
    the working directory or in a folder the checkout does not have."""
    import os
    if not path or os.path.isabs(path) or ".." in path.split("/") or "\0" in path:
        return None
    cwd = os.getcwd()
    if os.path.exists(path) and within(path, (cwd,)):
        return V(True, "derived", line, col, f"{path} is in the checkout")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder) or not within(folder, (cwd,)):
        return None
    base = os.path.basename(path)
    runcache.note_file(folder)
    try:
        names = sorted(os.listdir(folder))[:200]
    except OSError:
        return None
    for n in names:
        if not n.endswith((".py", ".sh")):
            continue
        try:
            text = ev.read_file(os.path.join(folder, n)) if ev.read_file else None
        except (OSError, ValueError):
            text = None
        if text and base in text:
            return unk(f"{path} is not in the checkout; {os.path.join(folder, n)} writes it "
                       f"when it is run", line, col)
    return V(False, "derived", line, col,
             f"{path} is not in the checkout and no script in {folder}/ writes it")


@answers("get", "getenv", "setdefault", "join", "exists", "isfile", "device",
         *{q.rsplit(".", 1)[-1] for q in _PLATFORM_PROBES})
def env_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`os.environ.get` / `os.getenv`, platform probes, `os.path.join` / `exists` of the checkout."""
    qual, line, col, args, kwargs, kw = c.qual, c.line, c.col, c.args, c.kwargs, c.kw
    if qual in ("os.environ.get", "os.getenv", "os.environ.setdefault"):
        key = args[0] if args else None
        d = kw("default", 1)
        kname = key.value if key is not None and key.known else "?"
        got = ev.env_value(kname, line, col, d if qual != "os.environ.setdefault" else None)
        if got is not None:
            return got
        out = unk(f"environment variable {kname} (set when the job is launched)", line, col)
        if d is not None and d.known:
            out.default = plain(d)
        return out
    if qual == "torch.device" and args and args[0].known and isinstance(args[0].value, str):
        # `torch.device("cuda:0").type` is "cuda": a device chosen by the probes above
        o = Obj(qual, args, kwargs, line, col)
        o.attrs["type"] = V(args[0].value.split(":")[0], "derived", line, col,
                            f"torch.device({args[0].value!r}).type")
        return V(o, "derived", line, col, f"result of {qual}(...)")
    # ---- probes of the platform: preflight sizes jobs on CUDA (or ROCm) GPUs
    if qual.lstrip("?") in _PLATFORM_PROBES:
        return V(_PLATFORM_PROBES[qual.lstrip("?")], "derived", line, col,
                 f"{qual.lstrip('?')}() on the CUDA / ROCm GPUs preflight sizes jobs for")
    if qual == "os.path.join" and args and not kwargs and all(
            a.known and isinstance(a.value, str) and "\0" not in a.value for a in args):
        return V(os.path.join(*[a.value for a in args]), "derived", line, col,
                 "os.path.join of known parts")
    if qual in ("os.path.exists", "os.path.isfile") and args and args[0].known and \
            isinstance(args[0].value, str):
        got = _artifact_exists(ev, args[0].value, line, col)
        if got is not None:
            return got
    return NO_MATCH


@answers("parse_args", "parse_known_args", "parse_intermixed_args")
def argparse_call(pats: Patterns, ev: Evaluator, c: Call) -> Any:
    """`parser.parse_args()`: the argparse namespace (the values are read by attribute)."""
    name, recv, line, col = c.name, c.recv, c.line, c.col
    if name in ("parse_args", "parse_known_args", "parse_intermixed_args"):
        if "HfArgumentParser" in recv or "TrlParser" in recv:
            return None
        given = c.args[0] if c.args else c.kwargs.get("args")
        if given is not None:
            # `parser.parse_args(args=["--model", "gpt2-medium"])`, `parse_args([])`: the
            # list the script passes is its command line, not the launch's
            ev.argparse_argv(given, line, col)
        ns = V(ArgsNS(), "derived", line, col)
        if name == "parse_known_args":
            return V((ns, unk("unknown arguments", line, col)), "derived", line, col)
        return ns
    return NO_MATCH
