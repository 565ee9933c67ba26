"""Real torch's answers are computed in a child process (tests/forked_answer.py): a crash of
real torch there is one test's failure, naming the signal, where in the test process it took
the pytest-xdist process and the tests it had left."""

from __future__ import annotations

import ctypes

import pytest
from forked_answer import forked_answer


def test_an_answer_comes_back_as_json_gives_it() -> None:
    assert forked_answer(lambda: {"verdict": "ok", "lines": (3, 4)}, "a class") == \
        {"verdict": "ok", "lines": [3, 4]}


def test_a_crash_of_real_torch_fails_the_test_only() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"crashed \(SIGSEGV\) computing a class"):
        forked_answer(lambda: ctypes.string_at(0), "a class")


def test_an_error_of_real_torch_fails_the_test_only() -> None:
    def raising() -> None:
        raise RuntimeError("no answer")

    with pytest.raises(pytest.fail.Exception, match="computing a class with real torch raised"):
        forked_answer(raising, "a class")
