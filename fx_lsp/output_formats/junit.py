"""``--output-format junit``: JUnit XML, a test suite per file and a failing case per problem."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fx_lsp.check import CheckRun, cell_position, display_path
from fx_lsp.escaping import xml_text
from fx_lsp.output_formats.common import heading, location
from fxcore.reporting.report import Problem


def junit(run: CheckRun) -> str:
    """JUnit XML: a test suite per file, a failing test case per problem (a passing one for a
    file without problems). Workspace text goes through ``escaping.xml_text``: ElementTree
    escapes markup but writes characters XML cannot hold as they are."""
    by_path: dict[str, list[Problem]] = {result.path: [] for result in run.results}
    for problem in run.report.problems:
        by_path.setdefault(problem.path, []).append(problem)
    suites = ET.Element("testsuites", name="fx-lsp", tests=str(max(len(run.report.problems), 0)),
                        failures=str(len(run.report.problems)))
    for path, problems in sorted(by_path.items()):
        shown_path = xml_text(display_path(path))
        suite = ET.SubElement(suites, "testsuite", name=shown_path,
                              tests=str(max(len(problems), 1)), failures=str(len(problems)))
        for problem in problems:
            place = cell_position(problem.path, problem.line, problem.column)
            where = f"line {problem.line}, column {problem.column}" if place is None else \
                f"cell {place.cell_number}, line {place.line}, column {place.column}"
            case = ET.SubElement(suite, "testcase", classname=shown_path,
                                 name=f"{problem.code} at {where}")
            shown_heading = xml_text(heading(problem))
            failure = ET.SubElement(case, "failure", message=shown_heading, type=problem.code)
            failure.text = f"{xml_text(location(problem.path, problem.line, problem.column))}" \
                f": {shown_heading}"
        if not problems:
            ET.SubElement(suite, "testcase", classname=shown_path, name="fx-lsp")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
