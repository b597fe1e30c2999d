"""The coverage table of docs/frameworks.md, written from the adapters themselves (what each
reads, what it does not, how many examples prove it)."""

from __future__ import annotations

from preflight.frameworks import adapters


def _cell(items) -> str:
    return "<br>".join(str(x).replace("|", "\\|").replace("\n", " ") for x in items) or "—"


def coverage_markdown() -> str:
    rows = ["| Framework | Launched by | Read | Not read | Examples |",
            "|---|---|---|---|---|"]
    for a in adapters():
        launched = ", ".join(f"`{p}`" for p in a.programs or a.launched_by) or "—"
        rows.append(f"| {a.title} (`{a.name}`) | {launched} | {_cell(a.reads)} | {_cell(a.not_read)} "
                    f"| {len(a.EXAMPLES)} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m preflight.frameworks.coverage > table
    print(coverage_markdown(), end="")
