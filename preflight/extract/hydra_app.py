"""A Hydra app's config, composed as its launch line runs it.

A script decorated `@hydra.main(config_path=…, config_name=…)` (NeMo: `@hydra_runner(…)`)
reads no flags: its command-line words are Hydra overrides of a config composed from its
folder (`preflight.lang.hydra`). The composed document is read by the framework adapter
that claims it, like any config file; each fact sits where it was set — a config file's
line, or the override's word on the launch line (then with the line's origin).
"""

from __future__ import annotations

import os
from typing import Optional

from preflight import safe_read
from preflight.frameworks import locate_word, read_document
from preflight.lang import hydra
from preflight.lang.shell.values import MARK
from preflight.plan import Extraction, Origin, Source

#: how much of a script is searched for its `@hydra.main(…)`
HEAD_BYTES = 256 * 1024


def app_extraction(script: str, args: list[str], source: Optional[Source], origin: Origin,
                   env: Optional[dict] = None) -> Optional[Extraction]:
    """The composed config of the Hydra app `script` run with `args`, read by its
    framework's adapter; None when the script is no Hydra app with a config file."""
    text = safe_read.try_read_text(script, HEAD_BYTES, truncate=True)
    if not text or ("hydra" not in text and "hydra_runner" not in text):
        return None
    cpath, cname = hydra.app_config(text)
    over_path, over_name, words = hydra.cli_config(list(args))
    cpath, cname = over_path or cpath, over_name or cname
    if not cname or MARK in cname or (cpath and MARK in cpath):
        return None
    folder = cpath if cpath and os.path.isabs(cpath) else os.path.join(os.path.dirname(script), cpath or "")
    folder = os.path.normpath(folder)
    name = cname if cname.endswith((".yaml", ".yml")) else cname + ".yaml"
    primary = os.path.join(folder, name)
    if not os.path.isfile(primary):
        return None
    known_env = {k: v for k, v in (env or {}).items() if isinstance(v, str) and MARK not in v} if env else None

    def locate(o: hydra.Override) -> Optional[Source]:
        return locate_word(source, words[o.index]) if source is not None else None

    comp = hydra.compose(folder, name, words, locate=locate, env=known_env)
    ext = read_document(primary, comp.cfg, {}, kind="yaml", diagnostics=comp.diagnostics,
                        where=comp.src, unread=hydra.unresolved_reason)
    line_path = source.path if source is not None else None
    facts = [(n, f.model_copy(update={"origin": origin}) if f.source is not None
              and f.source.path == line_path and f.known else f) for n, f in ext.facts]
    return ext.model_copy(update={"facts": facts, "references": list(comp.files)})
