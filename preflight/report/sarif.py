"""SARIF 2.1.0 for code scanning (GitHub's upload-sarif and any other SARIF consumer).

Locations are repo-relative URIs against `%SRCROOT%`; every result carries a
`partialFingerprints` entry computed from the rule, the relative path, the message with
its numbers blanked and the text of the flagged line — never the absolute path or the
line number — so a finding keeps its identity when lines move or an estimate changes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import quote

from preflight.version import DISTRIBUTION, __version__
from preflight.fix.attach import fix_for
from preflight.plan import Diagnostic
from preflight.report.common import (FINGERPRINT_KEY, all_diagnostics, doc_section,
                                     fingerprints, relpath, root_dir, rule_attr, rule_docs)

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FALLBACK_URI = f"https://pypi.org/project/{DISTRIBUTION}/"


def information_uri() -> str:
    """The project's home page from its installed metadata."""
    try:
        from importlib.metadata import metadata
        md = metadata(DISTRIBUTION)
        for entry in md.get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("homepage", "home", "repository", "source") and url.strip():
                return url.strip()
        if md.get("Home-page"):
            return md["Home-page"]
    except Exception:  # noqa: BLE001 - metadata is optional decoration
        pass
    return FALLBACK_URI


def _text(s: str) -> str:
    """Markdown → readable plain text: fence lines and heading marks dropped (code kept)."""
    lines = []
    fenced = False
    for ln in s.splitlines():
        if ln.strip().startswith("```"):
            fenced = not fenced
            continue
        lines.append(ln if fenced else re.sub(r"^#+\s*", "", ln))
    return "\n".join(lines).strip()


def rule_descriptor(rule: Any) -> dict[str, Any]:
    code = str(rule_attr(rule, "code"))
    name = rule_attr(rule, "name", "") or ""
    summary = rule_attr(rule, "summary", "") or name or code
    severity = rule_attr(rule, "severity", "warning")
    severity = getattr(severity, "value", severity)          # an Enum member
    docs = rule_docs(rule)
    what = doc_section(docs, "What it does") if docs else ""
    out: dict[str, Any] = {"id": code}
    if name:
        out["name"] = name
    out["shortDescription"] = {"text": summary}
    out["fullDescription"] = {"text": _text(what) if what else summary}
    if docs:
        out["help"] = {"text": _text(docs), "markdown": docs}
    out["defaultConfiguration"] = {"level": LEVEL.get(str(severity), "warning")}
    props: dict[str, Any] = {"tags": [_category(code)]}
    for attr in ("misconception", "case"):
        v = getattr(rule, attr, None)
        v = getattr(v, "value", v)
        if v not in (None, "", "none", 0, False):
            props[attr] = v
    out["properties"] = props
    return out


def _category(code: str) -> str:
    return {"0": "input", "1": "memory", "2": "numerics", "3": "scaling",
            "4": "consistency"}.get(code[2:3], "other")


class _Stub:
    def __init__(self, d: Diagnostic):
        self.code, self.name, self.severity = d.code, d.name, d.severity
        self.summary = d.name.replace("-", " ") if d.name else d.code


def _uri(rel: str) -> str:
    return quote(rel, safe="/")


def _location(path: Optional[str], line: int, col: int, root: Optional[str],
              cell: Optional[int] = None) -> Optional[dict]:
    """A SARIF location. In a notebook the artifact is the notebook, the region the line
    within the cell, and the cell (1-based) is in the location's property bag."""
    if not path:
        return None
    rel = relpath(path, root)
    if rel is not None:
        art = {"uri": _uri(rel), "uriBaseId": "%SRCROOT%"}
    else:
        art = {"uri": Path(os.path.abspath(path)).as_uri()}
    region: dict[str, int] = {"startLine": max(line, 1)}
    if line > 0 and col > 0:
        region["startColumn"] = col
    out: dict[str, Any] = {"physicalLocation": {"artifactLocation": art, "region": region}}
    if cell is not None:
        out["properties"] = {"cell": cell}
    return out


def build(report: "Report", *, root: Optional[str] = None,
          rules: Optional[list] = None) -> dict[str, Any]:
    diags = all_diagnostics(report)
    if isinstance(rules, dict):
        rules = list(rules.values())
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for r in rules or []:
        code = rule_attr(r, "code")
        if code and code not in index:
            index[code] = len(descriptors)
            descriptors.append(rule_descriptor(r))
    for d in diags:
        if d.code not in index:
            index[d.code] = len(descriptors)
            descriptors.append(rule_descriptor(_Stub(d)))

    results = []
    for d, fp in zip(diags, fingerprints(diags, root)):
        text = d.message + (f"\nFix: {d.fix}" if d.fix else "")
        res: dict[str, Any] = {"ruleId": d.code, "ruleIndex": index[d.code],
                               "level": LEVEL.get(d.severity, "warning"),
                               "message": {"text": text}}
        loc = _location(d.path, d.line, d.col, root, d.cell)
        if loc:
            res["locations"] = [loc]
        related = [r for r in (_location(s.path, s.line, s.col, root, s.cell) for s in d.related) if r]
        if related:
            res["relatedLocations"] = [dict(r, id=i) for i, r in enumerate(related)]
        res["partialFingerprints"] = {FINGERPRINT_KEY: fp}
        if d.data:
            res["properties"] = {"data": _jsonable(d.data)}
        fx = fix_for(report, d)
        if fx is not None:
            res["fixes"] = [sarif_fix(fx, root)]
        results.append(res)

    run: dict[str, Any] = {
        "tool": {"driver": {"name": "preflight",
                            "fullName": f"{DISTRIBUTION} {__version__}",
                            "downloadUri": FALLBACK_URI,
                            "version": __version__,
                            "semanticVersion": __version__,
                            "informationUri": information_uri(), "rules": descriptors}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root_dir(root)).as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def sarif_fix(fx: Any, root: Optional[str]) -> dict[str, Any]:
    """A SARIF `fix`: whole-line replacements per file (columns are code points)."""
    changes = []
    for fe in fx.files:
        if not fe.changed:
            continue
        loc = _location(fe.path, 1, 0, root)
        art = loc["physicalLocation"]["artifactLocation"] if loc else {"uri": fe.path}
        reps = []
        for h in fe.replacements():
            last = h.old[-1].rstrip("\r\n")
            text = "".join(h.new)
            if h.old[-1].endswith("\n"):       # the region stops before the line break
                for nl in ("\r\n", "\n"):
                    if text.endswith(nl):
                        text = text[:-len(nl)]
                        break
            reps.append({"deletedRegion": {"startLine": h.start, "startColumn": 1,
                                           "endLine": h.end, "endColumn": len(last) + 1},
                         "insertedContent": {"text": text}})
        changes.append({"artifactLocation": art, "replacements": reps})
    return {"description": {"text": f"{fx.label} (preflight's first alternative that fits)"},
            "artifactChanges": changes}


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def render(report: "Report", *, root: Optional[str] = None, rules: Optional[list] = None) -> str:
    return json.dumps(build(report, root=root, rules=rules), indent=2) + "\n"
