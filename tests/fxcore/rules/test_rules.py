"""The registry of codes (``fxcore.rules``) is the one source: each code declared once, and
every place that shows codes (results, report severities, explain, the docs) reads it."""

from __future__ import annotations

import re
from collections import Counter

from fxcore.model.results import CODES, Failure, Hint
from fxcore.rules import BY_CODE, RULES
from fxcore.rules.documentation import documentation
from fxcore.worker.capture.fx.tracer import MESSAGES


def test_each_code_and_kind_is_declared_once() -> None:
    assert [code for code, count in Counter(r.code for r in RULES).items() if count > 1] == []
    kinds = [kind for rule in RULES for kind in rule.kinds]
    assert [kind for kind, count in Counter(kinds).items() if count > 1] == []
    # compile mode reports graph breaks under PyTorch's own GBnnnn codes
    assert all(re.fullmatch(r"FX\d{3}", rule.code)
               or (rule.mode == "compile" and re.fullmatch(r"GB\d{4}", rule.code))
               for rule in RULES)


def test_each_rule_is_documented_with_a_title_and_a_fix() -> None:
    for rule in RULES:
        assert rule.docs.startswith("**") and rule.title.endswith("."), rule.code
        assert "\nFix: " in rule.docs, rule.code
        assert rule.severity in ("error", "warning", "hint"), rule.code


def test_results_explain_and_the_tracer_read_the_registry() -> None:
    assert {kind: rule.code for rule in RULES for kind in rule.kinds} == CODES
    assert {code: doc.text for code, doc in documentation().items()} == \
        {rule.code: rule.docs for rule in RULES}
    assert {kind: rule.message for rule in RULES for kind in rule.kinds
                        if rule.message is not None} == MESSAGES


def test_report_severities_come_from_the_registry() -> None:
    from fxcore.reporting.report import severity
    place = {"path": "/a.py", "line": 1, "column": 1, "end_line": 1, "end_column": 2}
    for rule in RULES:
        kind = rule.kinds[0]
        item = Hint(**place, code=rule.code, kind=kind, message="") \
            if rule.severity == "hint" else \
            Failure(**place, code=rule.code, kind=kind, message="")
        assert severity(item, None) == BY_CODE[rule.code].severity, rule.code
