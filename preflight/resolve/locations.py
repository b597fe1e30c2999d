"""Where a model's files are found, offline: a local directory (the name as a path, or
under one of the search directories), the Hugging Face cache (`$HF_HUB_CACHE`,
`$HF_HOME/hub`, `~/.cache/huggingface/hub`: `models--org--name/snapshots/*/config.json`),
never the network; the safetensors headers preflight keeps for a hub model in the hub's
assets cache (`header_cache_file`); and the project's `[tool.preflight.models]` entry for
a name."""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Optional

from preflight import runcache, safe_read


# --------------------------------------------------------------------------- locations

def hf_cache_dirs() -> list[str]:
    """Where the Hugging Face hub cache may live, most specific first."""
    dirs = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if os.environ.get(var):
            dirs.append(os.environ[var])
    if os.environ.get("HF_HOME"):
        dirs.append(os.path.join(os.environ["HF_HOME"], "hub"))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(os.path.join(xdg, "huggingface", "hub"))
    seen: list[str] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def local_config(name: str, search_dirs: list[str],
                 filename: str = "config.json") -> Optional[str]:
    cands = []
    expanded = os.path.expanduser(os.path.expandvars(name))
    if os.path.isabs(expanded):
        cands.append(expanded)
    else:
        cands.append(os.path.abspath(expanded))
        cands.extend(os.path.join(d, expanded) for d in search_dirs or [])
    for c in cands:
        # `AutoConfig.from_pretrained("configs/llama_1b.json")`: transformers also takes the
        # path of the config file itself
        if filename == "config.json" and c.endswith(".json"):
            runcache.note_file(c)
            if os.path.isfile(c):
                return c
        p = os.path.join(c, filename)
        runcache.note_file(p)
        if os.path.isfile(p):
            return p
    return None


def cache_config(name: str, filename: str = "config.json") -> Optional[str]:
    """`filename` of the cached snapshot of hub model `name` (the one `refs/main` points
    to, else the newest holding it), or None."""
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        return None
    repo = "models--" + name.strip("/").replace("/", "--")
    for root in hf_cache_dirs():
        runcache.note_file(root)        # a model downloaded later adds a folder here
        if not os.path.isdir(root):
            continue
        target = os.path.join(root, repo)
        if not os.path.isdir(target):
            low = repo.lower()
            try:
                match = [d for d in os.listdir(root) if d.lower() == low]
            except OSError:
                match = []
            if not match:
                continue
            target = os.path.join(root, match[0])
        ref_main = os.path.join(target, "refs", "main")
        if os.path.isfile(ref_main):
            try:
                commit = safe_read.read_text(ref_main).strip()
                p = os.path.join(target, "snapshots", commit, filename)
                if os.path.isfile(p):
                    return p
            except OSError:
                pass
        runcache.note_file(os.path.join(target, "snapshots"))
        snaps = glob.glob(os.path.join(glob.escape(target), "snapshots", "*", filename))
        if snaps:
            return max(snaps, key=lambda p: os.path.getmtime(p))
    return None


def hub_cache_dir() -> str:
    """The folder the hub's downloads go to (and are read from first)."""
    return hf_cache_dirs()[0]


def header_cache_file(repo_id: str, commit: str) -> str:
    """Where the safetensors headers of hub model `repo_id` at `commit` are kept once read
    from the hub: the hub's assets cache (`$HF_ASSETS_CACHE`, else `$HF_HOME/assets`, else
    `~/.cache/huggingface/assets`), under `preflight/`."""
    root = os.environ.get("HF_ASSETS_CACHE")
    if not root:
        home = os.environ.get("HF_HOME") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "huggingface")
        root = os.path.join(home, "assets")
    folder = "models--" + repo_id.strip("/").replace("/", "--")
    return os.path.join(os.path.expandvars(root), "preflight", folder, commit,
                        "safetensors-headers.json")


def read_config(path: str) -> tuple[Optional[dict], Optional[str]]:
    try:
        data = json.loads(safe_read.read_text(path))
    except (OSError, ValueError, RecursionError) as e:   # JSONDecodeError is a ValueError
        return None, f"cannot read {path}: {e}"
    if not isinstance(data, dict):
        return None, f"{path} is not a JSON object"
    return data, None


def project_entry(name: str, project_models: dict) -> Optional[Any]:
    if not project_models or not isinstance(name, str):
        return None
    keys = {str(k).lower(): v for k, v in project_models.items()}
    for k in (name.lower(), name.lower().rsplit("/", 1)[-1]):
        if k in keys:
            return keys[k]
    return None
