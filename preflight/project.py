"""Where a project is: its root folder, its pyproject.toml, and where its cache lives.

Kept free of the settings model (`preflight.config` validates `[tool.preflight]` into a
`ProjectConfig`) so that a warm `preflight check`, which only needs to know where its
stored result is, imports nothing heavy.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight import runcache, safe_read

#: the cache folder's name at the project root, unless `cache-dir` says otherwise
CACHE_FOLDER = ".preflight_cache"


def find_root(start: Optional[str] = None) -> str:
    """Nearest folder at or above `start` (then at or above the working directory) holding
    .git or pyproject.toml; else the working directory."""
    def up_from(p: str) -> Optional[str]:
        d = os.path.abspath(p)
        if os.path.isfile(d):
            d = os.path.dirname(d)
        while True:
            runcache.note_file(os.path.join(d, ".git"))
            runcache.note_file(os.path.join(d, "pyproject.toml"))
            if os.path.exists(os.path.join(d, ".git")) or os.path.isfile(os.path.join(d, "pyproject.toml")):
                return d
            up = os.path.dirname(d)
            if up == d:
                return None
            d = up

    cwd = os.getcwd()
    return (up_from(start) if start else None) or up_from(cwd) or cwd


def has_preflight_table(pyproject: str) -> bool:
    """Does this pyproject.toml have a `[tool.preflight]` table (or `[[tool.preflight.jobs]]`)?"""
    try:
        return re.search(r"^[ \t]*\[\[?[ \t]*tool\.preflight\b", safe_read.read_text(pyproject),
                         re.M) is not None
    except OSError:
        return False


def find_pyproject(start_dir: str) -> Optional[str]:
    """The nearest pyproject.toml at or above start_dir that has a [tool.preflight] table
    (or, failing that, the nearest pyproject.toml at all: it marks the project root)."""
    d = os.path.abspath(start_dir if os.path.isdir(start_dir) else os.path.dirname(start_dir) or ".")
    first = None
    while True:
        p = os.path.join(d, "pyproject.toml")
        runcache.note_file(p)       # one created later changes what a stored run read
        if os.path.isfile(p):
            first = first or p
            if has_preflight_table(p):
                return p
        parent = os.path.dirname(d)
        if parent == d:
            return first
        d = parent


def settings_file(start: str) -> Optional[str]:
    """The pyproject.toml whose `[tool.preflight]` applies from `start` (a folder or file,
    or a .toml file named with --config)."""
    if start.endswith(".toml") and os.path.isfile(start):
        return os.path.abspath(start)
    return find_pyproject(start)


def cache_dir_setting(pyproject: Optional[str]) -> Optional[str]:
    """`cache-dir` of a pyproject.toml's `[tool.preflight]`, resolved against its folder;
    None when unset or not readable (`preflight.config` reports a bad value)."""
    if pyproject is None:
        return None
    try:
        text = safe_read.read_text(pyproject, 1 << 20)
        if "cache" not in text:
            return None
        try:
            import tomllib  # type: ignore[import-not-found]
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        table = tomllib.loads(text).get("tool", {}).get("preflight", {})
        value = table.get("cache-dir", table.get("cache_dir"))
    except Exception:  # noqa: BLE001 - unreadable or malformed: the config reports it
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    return cache_dir_at(os.path.dirname(pyproject), value)


def cache_dir_at(root: str, value: str) -> str:
    """A `cache-dir` setting as a folder: relative to the pyproject.toml's folder `root`."""
    return os.path.join(root, os.path.expanduser(value))


def cache_folder(first: str, config_path: Optional[str] = None) -> str:
    """The cache folder of a check of `first` (its first path): `cache-dir`, else
    `.preflight_cache` in the project root."""
    return (cache_dir_setting(settings_file(config_path or first))
            or os.path.join(find_root(first), CACHE_FOLDER))
