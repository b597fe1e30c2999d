"""Report writers: text, concise, json, json-lines, github, sarif, markdown, gitlab, junit,
rdjson.

`render(report, fmt)` is the single entry point; each format lives in its own module and is
imported only when asked for, so `preflight check` pays for the writer it uses and no other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

from preflight.lazy import lazy
from preflight.report.errors import DiffBaseError

# the options type only for a call that gives keywords: `preflight check` imports this
# package to find a stored result
options_types = lazy("preflight.options")
changes = lazy("preflight.report.changes")
common = lazy("preflight.report.common")
github = lazy("preflight.report.github")
markdown = lazy("preflight.report.markdown")
sarif = lazy("preflight.report.sarif")
text = lazy("preflight.report.text")

if TYPE_CHECKING:  # pragma: no cover
    from preflight.options import CheckOptions
    from preflight.result import Report

__all__ = ["FORMATS", "SHOWS_FIXES", "render", "filter_changed", "DiffBaseError"]

#: Every value `--format` accepts.
FORMATS = ("text", "concise", "json", "json-lines", "github", "sarif", "markdown", "gitlab",
           "junit", "rdjson")

#: The formats that show each job's fix (the edit under a finding, SARIF `fixes`, the
#: Markdown suggestion block, the JSON `fit` / `fix`); the others need none computed.
SHOWS_FIXES = ("text", "json", "sarif", "markdown")

#: the fields of `CheckOptions` that `render` takes as keywords
RENDER_KEYWORDS = ("show_ledger", "diff_base", "fail_level", "quiet", "statistics")


def render(report: "Report", fmt: str, options: Optional["CheckOptions"] = None, *,
           color: Optional[bool] = None, root: Optional[str] = None,
           rules: Optional[list] = None, **keywords: Any) -> str:
    """The report as text in format `fmt`.

    options: the run's `preflight.options.CheckOptions`, of which the writers read
             `show_ledger` (text: every ledger line with its formula), `quiet` (text and
             concise print the findings and nothing else), `statistics` (text and concise
             print how many findings of each code instead) and `diff_base` (keep only the
             jobs that files changed since this git ref belong to). Those fields may be
             given as keywords instead (`render(report, "text", show_ledger=True)`); every
             finding is shown whatever the fail level (the exit status is the command's
             business).
    color: None decides by the terminal (stdout a TTY and NO_COLOR unset); only `text` uses it.
    root: the directory paths are made relative to (SARIF URIs, GitHub annotations, links);
          defaults to the current directory.
    rules: rule objects or classes (`code, name, summary, severity, misconception, case` and
           their docs) for SARIF's rule metadata; codes seen in the findings otherwise.

    The text ends with a newline unless it is empty (a clean report under `quiet`).
    """
    if options is None or keywords:
        for name in keywords:
            if name not in RENDER_KEYWORDS:
                raise TypeError(f"render() got an unexpected keyword argument {name!r}")
        options = (replace(options, **keywords) if options is not None
                   else options_types.CheckOptions(**keywords))
    diff_base, quiet = options.diff_base, options.quiet
    if diff_base:
        report = filter_changed(report, diff_base, root)
    if fmt == "json":
        import json
        return json.dumps(report.to_json(), indent=2) + "\n"
    if fmt == "json-lines":
        # one finding per line (the contract's diagnostic object), for grep / jq / log shippers
        import json
        return "".join(json.dumps(d.to_json(), ensure_ascii=False) + "\n"
                       for d in common.all_diagnostics(report))
    if fmt in ("text", "concise"):
        if options.statistics:
            return text.render_statistics(report)
        if fmt == "concise":
            return text.render_concise(report, quiet=quiet)
        return text.render_text(report, color=color, show_ledger=options.show_ledger,
                                quiet=quiet)
    if fmt == "github":
        return github.render(report, root=root)
    if fmt == "sarif":
        return sarif.render(report, root=root, rules=rules)
    if fmt == "markdown":
        return markdown.render(report, root=root, diff_base=diff_base)
    if fmt in ("gitlab", "junit", "rdjson"):
        import importlib
        return importlib.import_module(f"preflight.report.{fmt}").render(report, root=root)
    raise ValueError(f"unknown report format {fmt!r} (expected one of {', '.join(FORMATS)})")


def filter_changed(report: "Report", base: str, root: Optional[str] = None) -> "Report":
    """The jobs of `report` that a file changed since `base` belongs to.

    Changed files are `git diff --name-only BASE...HEAD` in the repository holding `root`
    (the current directory by default). Findings not tied to a job are kept when their file
    changed or when they have no file."""
    return changes.filter_changed(report, base, root)


