"""What the repository's documentation says of a command it shows, where the job itself
does not say it. The command is found in a Markdown file beside the job's entry file or
above it (a fenced block naming that file). Each value is `inferred` (read from a
document, weaker than everything but an assumption) and its reason names the file and line.

- A model argument left as a placeholder (`--model_name_or_path <path_to_your_llama>`): the
  model the prose right before the command names, when it names exactly one model of the
  offline catalogue (of several blocks, the one whose flags are the launch's; the prose is
  the text between the previous fence or heading and the block).
- The number of nodes of a multi-GPU job no launcher of the job states: the comment right
  above the command in its block (`# Train Llama 3.1 8B with HSDP + TP on 2 nodes (16 GPUs
  total)`), when every documented command of the file says the same."""

from __future__ import annotations

import os
import re
from typing import Optional

from preflight import runcache, safe_read
from preflight.models import catalog
from preflight.plan import Source

#: an argument that stands for the user's own value: `<your_path>`, `<MODEL_DIR>`
PLACEHOLDER = re.compile(r"^<[^<>\s]{1,200}>$")
#: a model named in prose: a name with a size (`LLaMA-7B`, `OPT-6.7B`, `Llama-2-13b`)
_MODEL_WORD = re.compile(r"\b[A-Za-z][\w.]*(?:-[\w.]+)*?-\d+(?:\.\d+)?[BbMm]\b")
_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w.-]*")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_MAX_BYTES = 1_000_000
#: folders above the script searched for its documentation
_MAX_UP = 3


def _docs(start: str) -> list[str]:
    out: list[str] = []
    d = os.path.dirname(os.path.abspath(start))
    for _ in range(_MAX_UP + 1):
        runcache.note_file(d)
        try:
            names = sorted(os.listdir(d))
        except OSError:
            names = []
        out.extend(os.path.join(d, n) for n in names if n.lower().endswith(".md"))
        d = os.path.dirname(d)
    return out


def _docs_naming(start: str, needle: str) -> list[tuple[str, list[str]]]:
    """(path, lines) of the Markdown files beside `start` or above it whose text holds
    `needle`; a file too large or not readable is skipped."""
    out = []
    for path in _docs(start):
        try:
            if os.path.getsize(path) > _MAX_BYTES:
                continue
            text = safe_read.read_text(path)
        except OSError:
            continue
        if needle in text:
            out.append((path, text.splitlines()))
    return out


def _blocks(lines: list[str]) -> list[tuple[int, int, int]]:
    """(start of the prose before it, first line, last line) of each fenced block, 0-based."""
    out, prose, i = [], 0, 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            out.append((prose, i, j))
            prose, i = j + 1, j + 1
            continue
        if _HEADING.match(lines[i]):
            prose = i + 1
        i += 1
    return out


def documented_model(placeholder: str, script: str, flags: list[str]
                     ) -> Optional[tuple[str, Source, str]]:
    """(the catalogue's name of the model, where the prose names it, why) for a placeholder
    model argument of a documented command; None when no document shows the command or its
    prose does not name exactly one catalogue model."""
    if not PLACEHOLDER.match(placeholder or "") or not script:
        return None
    want = set(flags)
    best: list[tuple[float, str, int, list[str]]] = []
    for path, lines in _docs_naming(script, placeholder):
        for prose, first, last in _blocks(lines):
            block = "\n".join(lines[first:last])
            if placeholder not in block or os.path.basename(script) not in block:
                continue
            have = set(_FLAG.findall(block))
            score = len(want & have) / max(len(want | have), 1)
            best.append((score, path, prose, lines[prose:first]))
    if not best:
        return None
    best.sort(key=lambda b: -b[0])
    if len(best) > 1 and best[1][0] == best[0][0]:
        return None                     # two documented commands fit the launch as well
    _, path, prose, text = best[0]
    named: dict[str, int] = {}
    for k, line in enumerate(text):
        for word in _MODEL_WORD.findall(line):
            hit = catalog.lookup_entry(word)
            if hit is not None:
                named.setdefault(hit[0], prose + k + 1)
    if len(named) != 1:
        return None
    canonical, line = next(iter(named.items()))
    rel = os.path.relpath(path)
    shown = rel if not rel.startswith("..") else path
    return canonical, Source(path=shown, line=line, col=1), (
        f"{placeholder} is a placeholder; the command as {shown} documents it fine-tunes the "
        f"model its text names at line {line} ({canonical})")


#: a node count in a comment: `on 2 nodes`, `2-node`, `a single 8-GPU node`, `one node`
_NODES = re.compile(r"\b(?:(\d{1,4})|(one|two|four|eight|sixteen)|(a single|single))"
                    r"(?:\s*[-\s]\s*\d{1,3}\s*-?\s*GPUs?)?\s*[-\s]\s*nodes?\b", re.I)
_WORDS = {"one": 1, "two": 2, "four": 4, "eight": 8, "sixteen": 16, "a single": 1, "single": 1}
#: a total stated beside it (`(16 GPUs total)`, `16 GPUs in total`)
_TOTAL = re.compile(r"\b(\d{1,5})\s*GPUs?\s*(?:in\s+)?total\b", re.I)


def documented_nodes(entry: str, world_size: int) -> Optional[tuple[int, Source, str]]:
    """(nodes, where the comment says it, why) for a job of `world_size` processes whose
    entry file (`examples/…/llama-3_1-8b-hsdp-tp.yaml`) a documented command runs under a
    comment naming its node count; None when no document does, or two say different
    counts, or the count does not divide the world size, or a stated total disagrees."""
    if not entry:
        return None
    base = os.path.basename(entry)
    found: dict[int, tuple[str, int, str]] = {}
    for path, lines in _docs_naming(entry, base):
        for _, first, last in _blocks(lines):
            for i in range(first + 1, last):
                if base not in lines[i] or lines[i].lstrip().startswith("#"):
                    continue
                j = i - 1                  # the comment lines right above the command
                while j > first and lines[j].lstrip().startswith("#"):
                    j -= 1
                comment = " ".join(x.strip().lstrip("#").strip() for x in lines[j + 1:i])
                m = _NODES.search(comment)
                if not m:
                    continue
                n = int(m.group(1)) if m.group(1) else _WORDS[(m.group(2) or m.group(3)).lower()]
                total = _TOTAL.search(comment)
                if n < 1 or world_size % n or (total and int(total.group(1)) != world_size):
                    return None
                found.setdefault(n, (path, j + 2, comment))    # the comment's first line
    if len(found) != 1:
        return None
    n, (path, line, comment) = next(iter(found.items()))
    rel = os.path.relpath(path)
    shown = rel if not rel.startswith("..") else path
    return n, Source(path=shown, line=line, col=1), (
        f"{shown}:{line} documents the command that runs {base} as: \"{comment}\"")
