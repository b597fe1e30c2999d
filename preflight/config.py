"""`[tool.preflight]` in pyproject.toml: project-wide defaults for `preflight check`.

```toml
[tool.preflight]
gpu = "H100-80GB"            # or gpu-memory = "40GB"
headroom = 0.2               # fraction of capacity kept free (misconception 6)
select = ["PF1", "PF2"]      # code prefixes to report (default: all)
ignore = ["PF303"]
fail-level = "warning"       # error | warning | info: lowest severity that fails the run
extend-exclude = ["experiments/old/"]  # gitignore-style; `exclude` replaces the defaults
cache-dir = ".preflight_cache"         # per-file extraction cache (relative to this file)
hub = true                   # ask the Hugging Face hub for a model nothing offline sizes
[tool.preflight.per-file-ignores]
"configs/*.json" = ["PF106"]  # the only way to silence a finding in JSON
[[tool.preflight.jobs]]       # consumed by discovery
entry = "train.py"
[tool.preflight.models]       # consumed by model resolution
"my-org/my-model" = { params = 1300000000 }
```

Keys may be spelled with `-` or `_`. A malformed file or value is a located PF005
diagnostic on `ProjectConfig.diagnostics`, never an exception.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Optional

from pydantic import BaseModel, Field

from preflight import safe_read
from preflight.project import cache_dir_at, settings_file
from preflight.plan import SEVERITIES, Diagnostic
from preflight.units import parse_size



class ProjectConfig(BaseModel):
    gpu: Optional[str] = None
    gpu_memory: Optional[int] = None           # bytes, from "40GB" / "80GiB"
    headroom: float = 0.2
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = Field(default_factory=dict)
    fail_level: str = "warning"
    jobs: list[dict[str, Any]] = Field(default_factory=list)
    models: dict[str, Any] = Field(default_factory=dict)
    #: folders and files a directory walk skips (gitignore-style, relative to `root`);
    #: None: preflight.walk.DEFAULT_EXCLUDE
    exclude: Optional[list[str]] = None
    extend_exclude: list[str] = Field(default_factory=list)
    #: where the per-file extraction cache lives (None: `.preflight_cache` at the root)
    cache_dir: Optional[str] = None
    #: files named on launch lines outside the project root are read only when this is set
    read_outside_root: bool = False
    #: a model no local file or catalogue entry sizes is asked of the Hugging Face hub
    #: (never while HF_HUB_OFFLINE is set); off: the check makes no network request
    hub: bool = False
    #: the pyproject.toml the values came from (None: built-in defaults)
    path: Optional[str] = None
    #: its directory; per-file-ignores globs are relative to it
    root: Optional[str] = None
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    #: line of each key in the file (`gpu` → 5), for findings about a value
    lines: dict[str, int] = Field(default_factory=dict)


def _line_of(text: str, key: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line) or re.match(rf"\s*{re.escape(key.replace('_', '-'))}\s*=", line):
            return i
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(r"\s*\[\[?\s*tool\.preflight", line):
            return i
    return 1


def _codes(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of code prefixes such as [\"PF1\", \"PF201\"]")
    return [v.strip().upper() for v in value]


def load_project_config(start_dir: str = ".") -> ProjectConfig:
    """Read `[tool.preflight]` from the nearest pyproject.toml at or above start_dir (or
    from start_dir itself when it names a .toml file)."""
    path = settings_file(start_dir)
    if path is None:
        return ProjectConfig()
    try:
        st = os.stat(path)
    except OSError:
        return _load(path, 0, 0)
    # every job of a check asks for the same file: read and validate it once per version
    return _load(path, st.st_mtime_ns, st.st_size).model_copy(deep=True)


@functools.lru_cache(maxsize=64)
def _load(path: str, mtime_ns: int, size: int) -> ProjectConfig:
    root = os.path.dirname(path)
    cfg = ProjectConfig(path=path, root=root)
    try:
        text = safe_read.read_text(path, 1 << 20)
    except OSError as e:
        cfg.diagnostics.append(Diagnostic(code="PF005", name="malformed-config", severity="error",
                                          message=f"cannot read {path}: {e}", path=path))
        return cfg
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError) as e:   # TOMLDecodeError; an int over 4,300 digits
        # here: lazy() would import the lang package, unused by `estimate --model`
        from preflight.lang.positions import long_number_position, too_many_digits
        m = re.search(r"line (\d+), column (\d+)", str(e))
        if too_many_digits(e):
            e = ValueError("an integer of over 4,300 digits (at line {}, column {})".format(
                *long_number_position(text)))
            m = re.search(r"line (\d+), column (\d+)", str(e))
        cfg.diagnostics.append(Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"cannot parse pyproject.toml: {e}", path=path,
            line=int(m.group(1)) if m else 1, col=int(m.group(2)) if m else 1))
        return cfg
    tool = data.get("tool", {})
    table = tool.get("preflight", {}) if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return cfg
    norm = {str(k).replace("-", "_"): (k, v) for k, v in table.items()}

    def bad(key: str, why: str) -> None:
        cfg.diagnostics.append(Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"[tool.preflight] {key}: {why}", path=path, line=_line_of(text, key), col=1))

    for key, (orig, value) in norm.items():
        cfg.lines[key] = _line_of(text, orig)
        try:
            if key == "gpu":
                if not isinstance(value, str):
                    raise ValueError("expected a GPU name such as \"H100-80GB\"")
                cfg.gpu = value
            elif key == "gpu_memory":
                cfg.gpu_memory = parse_size(value)
            elif key == "headroom":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                    raise ValueError(f"expected a fraction in [0, 1), got {value!r}")
                cfg.headroom = float(value)
            elif key in ("select", "ignore", "extend_select", "extend_ignore"):
                target = "select" if "select" in key else "ignore"
                getattr(cfg, target).extend(_codes(value))
            elif key == "per_file_ignores":
                if not isinstance(value, dict):
                    raise ValueError("expected a table of glob = [codes]")
                cfg.per_file_ignores = {str(g): _codes(c) for g, c in value.items()}
            elif key == "fail_level":
                if value not in SEVERITIES:
                    raise ValueError(f"expected one of {', '.join(SEVERITIES)}, got {value!r}")
                cfg.fail_level = value
            elif key == "jobs":
                if not isinstance(value, list) or not all(isinstance(j, dict) for j in value):
                    raise ValueError("expected [[tool.preflight.jobs]] tables")
                cfg.jobs = value
            elif key in ("read_outside_root", "hub"):
                if not isinstance(value, bool):
                    raise ValueError(f"expected true or false, got {value!r}")
                setattr(cfg, key, value)
            elif key == "models":
                if not isinstance(value, dict):
                    raise ValueError("expected a table of model name = params or config fields")
                cfg.models = value
            elif key in ("exclude", "extend_exclude"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError("expected a list of gitignore-style patterns")
                setattr(cfg, key, list(value))
            elif key == "cache_dir":
                if not isinstance(value, str) or not value.strip():
                    raise ValueError("expected a folder path")
                cfg.cache_dir = cache_dir_at(root, value)
            # unknown keys belong to other parts (or future versions): left alone
        except ValueError as e:
            bad(orig, str(e))
    return cfg
