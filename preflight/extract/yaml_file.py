"""YAML config files, each read by the framework adapter that claims it (accelerate configs,
training recipes of axolotl, LLaMA-Factory, litgpt, torchtune, llm-foundry, LightningCLI,
TRL / HfArgumentParser argument files, GPT-NeoX, DeepSpeed), each fact at the line and
column of its key.

YAML is composed with `yaml.SafeLoader` and converted node by node (positions.yaml_tree):
no tag — `!!python/object` included — ever constructs an object; such a tag is reported
and its value read as plain text.

A document that includes others (`_base_:`, `extends:`, `!include`) is read merged with
them (`preflight.lang.includes`); a Hydra / OmegaConf config (a `defaults:` list of
groups, `${…}` interpolations) is composed from its folder (`preflight.lang.hydra`), with
the group choices and deletions of the launch line's overrides when it is the job's
entry. Either way each fact sits at the file and line that set it.
"""

from __future__ import annotations

import os
from typing import Optional

from preflight.extract.document import read_including
from preflight.frameworks import read_document
from preflight.lang import hydra, includes
from preflight.lang.positions import flow_depth, MAX_YAML_FLOW_DEPTH, yaml_tree
from preflight.plan import Diagnostic, Extraction

def extract(path: str, text: str, args: Optional[list[str]] = None) -> Extraction:
    import yaml

    deep = flow_depth(text)
    if deep is not None:
        return Extraction(path=path, kind="yaml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"YAML nested over {MAX_YAML_FLOW_DEPTH} levels deep; not read",
            path=path, line=deep[0], col=deep[1])])
    try:
        tags: dict = {}
        cfg, pos, odd = yaml_tree(text, tagged=tags)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return Extraction(path=path, kind="yaml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", severity="error",
            message=f"malformed YAML: {problem}", path=path, line=line, col=col,
            fix="fix the YAML syntax (indentation or an unclosed quote is the usual cause)")])
    except RecursionError:
        return Extraction(path=path, kind="yaml", diagnostics=[Diagnostic(
            code="PF005", name="malformed-config", message="YAML nested too deeply to read",
            path=path, line=1, col=1)])
    diags: list[Diagnostic] = []
    for tag, line, col in dict.fromkeys(t for t in odd if "python" in t[0] and t[0] != includes.INCLUDE_TAG):
        short = tag.replace("tag:yaml.org,2002:", "!!")
        diags.append(Diagnostic(code="PF005", name="malformed-config", severity="warning",
                                message=f"YAML tag {short} is not constructed; its value is read as plain text",
                                path=path, line=line, col=col))
    if not isinstance(cfg, dict):
        return Extraction(path=path, kind="yaml", diagnostics=diags)
    if includes.has_includes(cfg, tags):
        merged = read_including(path, cfg, pos, kind="yaml", tags=tags, diagnostics=diags)
        if merged is not None:
            return merged
    elif hydra.is_defaults_list(cfg.get("defaults")) or "${" in text:
        words = [a for a in args or [] if not a.startswith("-")]
        comp = hydra.compose(os.path.dirname(path), os.path.basename(path), words, values=False,
                             loaded=includes.Loaded(path, cfg, pos, tags))
        # read alone, a group config's defaults may name groups of an app folder above it:
        # a group option not found is said, not warned of
        found = [d.model_copy(update={"severity": "info"}) if d.code == "PF006" and not args else d
                 for d in comp.diagnostics]
        return read_document(path, comp.cfg, pos, kind="yaml", diagnostics=diags + found,
                             where=comp.src, unread=hydra.unresolved_reason)
    return read_document(path, cfg, pos, kind="yaml", diagnostics=diags)

