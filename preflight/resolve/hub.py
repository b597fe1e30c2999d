"""The Hugging Face hub, asked only when the user allows the network (`--hub`,
`[tool.preflight] hub = true`) and never while `HF_HUB_OFFLINE` (or
`TRANSFORMERS_OFFLINE`) is set: a model's `config.json` (or a saved adapter's
`adapter_config.json`) downloaded into the hub's own cache, where the next run finds it
offline, and its safetensors headers read by HTTP range requests, never the weights, kept
in the hub's assets cache (`locations.header_cache_file`).

Everything goes through `huggingface_hub` (the optional extra `hub`), imported here only
when the hub is asked. Every failure (no such repository, a gated one, no network, the
package missing) is a reason in words, never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from typing import Any, Iterator, Optional

from preflight import runcache
from preflight.version import DISTRIBUTION, __version__
from preflight.resolve.checkpoints import INDEX, SINGLE, Tensors, shards_of, tensors_of
from preflight.resolve.locations import header_cache_file, hub_cache_dir

#: the variables that keep huggingface_hub offline, and the values that set them
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = {"1", "ON", "YES", "TRUE"}
#: `org/name`, as the hub spells a model repository
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
#: the extra that installs huggingface_hub
EXTRA = f"pip install '{DISTRIBUTION}[hub]'"


def offline_variable() -> Optional[str]:
    """The variable that keeps the hub offline (`HF_HUB_OFFLINE=1`), or None."""
    for var in OFFLINE_VARS:
        runcache.note_env(var)
        if (os.environ.get(var) or "").strip().upper() in _TRUE:
            return var
    return None


def is_repo_id(name: str) -> bool:
    """Whether `name` is spelled as a hub model repository (`org/name`), not a path."""
    return bool(_REPO_ID.match(name)) and ".." not in name and "--" not in name


def is_local_path(name: str) -> bool:
    """Whether `name` can only be a directory: absolute, relative to `.`, `..` or `~`, ending
    in a separator, or with more than one `/` (a hub id has exactly one, a legacy hub name
    such as `gpt2` none)."""
    n = name.strip()
    return (n.startswith(("/", "./", "../", "~", "\\")) or n.endswith(("/", "\\"))
            or n.count("/") > 1 or bool(re.match(r"^[A-Za-z]:[\\/]", n)))


def endpoint() -> str:
    runcache.note_env("HF_ENDPOINT")
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _library() -> tuple[Any, Optional[str]]:
    try:
        # here: the network side only when the hub is asked; the static path never loads it
        import huggingface_hub
        import huggingface_hub.constants
        import huggingface_hub.utils
    except ImportError:
        return None, f"huggingface_hub is not installed ({EXTRA})"
    return huggingface_hub, None


def _why(e: Exception) -> tuple[str, bool]:
    """(what went wrong, in one line; whether the repository lacks the file)."""
    kind = type(e).__name__
    if kind == "RemoteEntryNotFoundError" or kind == "EntryNotFoundError":
        return "no such file in the repository", True
    if kind == "GatedRepoError":
        return "the repository is gated (accept its licence and log in: hf auth login)", False
    if kind == "RepositoryNotFoundError":
        return "no such repository (or a private one)", False
    if kind == "RevisionNotFoundError":
        return "no such revision", False
    first = (str(e).strip().splitlines() or [""])[0]
    return f"{kind}: {first[:200]}", False


@contextlib.contextmanager
def _quiet(hf: Any) -> Iterator[None]:
    """While preflight asks the hub: no progress bar and no library warning on a check's
    stderr (its findings), and no telemetry (whose agent lookup is a request of its own);
    the library's settings are restored after."""
    constants = hf.constants
    telemetry = constants.HF_HUB_DISABLE_TELEMETRY
    bars = not hf.utils.are_progress_bars_disabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        constants.HF_HUB_DISABLE_TELEMETRY = True
        hf.utils.disable_progress_bars()
        try:
            yield
        finally:
            constants.HF_HUB_DISABLE_TELEMETRY = telemetry
            if bars:
                hf.utils.enable_progress_bars()


def download(repo_id: str, filename: str,
             revision: Optional[str] = None) -> tuple[Optional[str], Optional[str], bool]:
    """(the cached path of `filename` of hub model `repo_id`, None, False); or (None, why,
    whether the repository exists but lacks the file)."""
    hf, why = _library()
    if hf is None:
        return None, why, False
    try:
        with _quiet(hf):
            path = hf.hf_hub_download(repo_id, filename, revision=revision,
                                      cache_dir=hub_cache_dir(), endpoint=endpoint(),
                                      library_name=DISTRIBUTION, library_version=__version__)
    except Exception as e:  # noqa: BLE001 - the network's every failure is a reason
        why, absent = _why(e)
        return None, f"{filename}: {why}", absent
    return str(path), None, False


def commit_of(path: str) -> Optional[str]:
    """The commit of a file of the hub cache (`…/snapshots/<commit>/config.json`)."""
    parts = os.path.normpath(path).split(os.sep)
    if len(parts) >= 3 and parts[-3] == "snapshots":
        return parts[-2]
    return None


def kept_headers(repo_id: str, commit: str) -> tuple[Optional[Tensors], Optional[str]]:
    """The headers an earlier run read from the hub for `repo_id` at `commit` (None when
    there are none), and the file they are kept in."""
    path = header_cache_file(repo_id, commit)
    runcache.note_file(path)
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        tensors, _ = tensors_of({k: {"dtype": d, "shape": s} for k, (d, s)
                                 in data["tensors"].items()}, path)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None, None                    # a damaged copy: read again from the hub
    return tensors, path


def headers(repo_id: str, commit: str) -> tuple[Optional[Tensors], Optional[str], Optional[str]]:
    """(tensors, what they were read from, None) from the hub's safetensors headers of
    `repo_id` at `commit` — `model.safetensors`, else the index and each shard — kept for
    the next run; or (None, None, why)."""
    hf, why = _library()
    if hf is None:
        return None, None, why
    api = hf.HfApi(endpoint=endpoint(), library_name=DISTRIBUTION, library_version=__version__)

    def parse(filename: str) -> Tensors:
        meta = api.parse_safetensors_file_metadata(repo_id, filename, revision=commit)
        return {n: (t.dtype, list(t.shape)) for n, t in meta.tensors.items()}

    try:
        with _quiet(hf):
            files, tensors = _parse_all(repo_id, commit, parse)
    except Exception as e:  # noqa: BLE001 - the network's every failure is a reason
        return None, None, _why(e)[0]
    if files is None:
        return None, None, str(tensors)
    where = f"{endpoint()}/{repo_id} at {commit[:12]} ({', '.join(files[:3])}" + (
        f" and {len(files) - 3} more)" if len(files) > 3 else ")")
    _keep(repo_id, commit, tensors, where)
    return tensors, where, None


def _parse_all(repo_id: str, commit: str, parse: Any) -> tuple[Optional[list[str]], Any]:
    """(the files read, their tensors) of the hub checkpoint; (None, why) for none."""
    try:
        return [SINGLE], parse(SINGLE)
    except Exception as e:  # noqa: BLE001 - a sharded checkpoint has no single file
        if not _why(e)[1]:
            raise
    index, why, _ = download(repo_id, INDEX, revision=commit)
    if index is None:
        return None, f"no safetensors checkpoint on the hub ({why})"
    files, why = shards_of(index)
    if files is None:
        return None, why
    tensors: Tensors = {}
    for shard in files:
        tensors.update(parse(shard))
    return files, tensors


def _keep(repo_id: str, commit: str, tensors: Tensors, where: str) -> None:
    """The headers kept in the hub's assets cache; a cache that cannot be written only
    means the next run asks again."""
    path = header_cache_file(repo_id, commit)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"repo_id": repo_id, "commit": commit, "read_from": where,
                       "tensors": {k: [d, s] for k, (d, s) in tensors.items()}}, f)
        os.replace(tmp, path)
    except OSError:
        pass
