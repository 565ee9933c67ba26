"""``--output-format junit``: JUnit XML, a test suite per file and a failing case per problem."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fx_lsp.cli.output_formats.common import heading
from fx_lsp.escaping import xml_text
from fxcore.reporting.shown import ShownProblem, ShownReport


def junit(report: ShownReport) -> str:
    """JUnit XML: a test suite per file, a failing test case per problem (a passing one for a
    file without problems). Workspace text goes through ``escaping.xml_text``: ElementTree
    escapes markup but writes characters XML cannot hold as they are."""
    by_path: dict[str, list[ShownProblem]] = {result.path: [] for result in report.results}
    for shown in report.problems:
        by_path.setdefault(shown.problem.path, []).append(shown)
    suites = ET.Element("testsuites", name="fx-lsp", tests=str(max(len(report.problems), 0)),
                        failures=str(len(report.problems)))
    for path, problems in sorted(by_path.items()):
        shown_path = xml_text(report.places.of(path).path)
        suite = ET.SubElement(suites, "testsuite", name=shown_path,
                              tests=str(max(len(problems), 1)), failures=str(len(problems)))
        for shown in problems:
            problem, place = shown.problem, shown.place.cell
            where = f"line {problem.line}, column {problem.column}" if place is None else \
                f"cell {place.cell_number}, line {place.line}, column {place.column}"
            case = ET.SubElement(suite, "testcase", classname=shown_path,
                                 name=f"{problem.code} at {where}")
            shown_heading = xml_text(heading(problem))
            failure = ET.SubElement(case, "failure", message=shown_heading, type=problem.code)
            failure.text = f"{xml_text(shown.place.words)}: {shown_heading}"
        if not problems:
            ET.SubElement(suite, "testcase", classname=shown_path, name="fx-lsp")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
