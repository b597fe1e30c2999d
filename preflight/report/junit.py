"""JUnit XML, for CI systems that show test reports (GitLab `artifacts:reports:junit`,
Jenkins, Azure Pipelines, CircleCI …). Written with the standard library's ElementTree.

One `<testsuite>` per file with findings and one `<testcase>` per finding, failed with
the message and the fix; a clean run is one passing test case, so that the report is
never empty. Test case names carry the location (`path:line:col CODE`), classnames the
file, and `file` / `line` attributes point at the line for tools that link them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from typing import TYPE_CHECKING, Optional

from preflight.plan import in_cell
from preflight.report.common import all_diagnostics, display_path, plural

if TYPE_CHECKING:  # pragma: no cover
    from preflight.result import Report


def build(report: "Report", *, root: Optional[str] = None) -> ET.Element:
    diags = all_diagnostics(report)
    suites = ET.Element("testsuites", name="preflight", tests=str(max(len(diags), 1)),
                        failures=str(len(diags)), errors="0")
    if not diags:
        suite = ET.SubElement(suites, "testsuite", name="preflight", tests="1", failures="0",
                              errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name=f"{plural(len(report.jobs), 'job')}: "
                      "no findings", classname="preflight")
        return suites

    def where(d) -> str:
        return display_path(d.path, root) or "(no file)"

    for path, group in groupby(diags, key=where):
        found = list(group)
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(found)),
                              failures=str(len(found)), errors="0", skipped="0")
        for d in found:
            loc = in_cell(path, d.cell) + (f":{d.line}" if d.line else "") + (f":{d.col}" if d.line and d.col else "")
            case = ET.SubElement(suite, "testcase", name=f"{loc} {d.code}", classname=path)
            if d.path:
                case.set("file", path)
            if d.line:
                case.set("line", str(d.line))
            first = " ".join(d.message.split())
            fail = ET.SubElement(case, "failure", message=f"{d.code} {first}", type=d.code)
            fail.text = "\n".join([f"{loc}: {d.code} {d.message}" + (f" [{d.name}]" if d.name else "")]
                                  + ([f"fix: {d.fix}"] if d.fix else []))
    return suites


def render(report: "Report", *, root: Optional[str] = None) -> str:
    tree = ET.ElementTree(build(report, root=root))
    ET.indent(tree)
    return ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n"
