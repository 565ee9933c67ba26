"""Each class's key in its file's text: what its verdicts depend on there, counted from the
class's first line."""

from __future__ import annotations

import textwrap

from fxcore.workspace.class_keys import ClassKey, class_keys
from fxcore.workspace.parsing import parse_module

SOURCE = textwrap.dedent('''\
    """A model."""

    import torch
    from torch import nn

    SCALE = 2
    UNUSED = 3


    def helper(x):
        return x * SCALE


    class Net(nn.Module):
        def forward(self, x):
            return helper(x)


    class Other(nn.Module):
        def forward(self, x):
            return torch.relu(x)


    if __name__ == "__main__":
        print(Net()(torch.ones(2)))
    ''')


def keys(text: str) -> dict[str, ClassKey]:
    return class_keys(text, parse_module(text))


def test_an_unreached_assignment_or_the_main_block_changes_no_key() -> None:
    before = keys(SOURCE)
    after = keys(SOURCE.replace("UNUSED = 3", "UNUSED = 4")
                 .replace("print(Net()", "print(Other()") + "_EDIT_NUMBER = 1\n")
    assert set(before) == {"Net", "Other"}
    assert after == before


def test_a_reached_helper_or_constant_changes_the_class_key_only() -> None:
    before = keys(SOURCE)
    for edited in (SOURCE.replace("x * SCALE", "x + SCALE"),
                   SOURCE.replace("SCALE = 2", "SCALE = 5")):
        after = keys(edited)
        assert after["Net"].digest != before["Net"].digest
        assert after["Other"] == before["Other"]


def test_lines_above_move_the_class_and_keep_its_key() -> None:
    before = keys(SOURCE)
    after = keys("# a comment\n\n" + SOURCE)
    assert {name: key.digest for name, key in after.items()} == \
        {name: key.digest for name, key in before.items()}
    assert after["Net"].first_line == before["Net"].first_line + 2


def test_a_line_between_a_reached_helper_and_the_class_changes_its_key() -> None:
    before = keys(SOURCE)
    after = keys(SOURCE.replace("    return x * SCALE\n", "    return x * SCALE\n\n"))
    assert after["Net"].digest != before["Net"].digest


def test_statements_run_on_import_count_for_every_class() -> None:
    before = keys(SOURCE)
    for edited in (SOURCE + "torch.manual_seed(0)\n",
                   SOURCE + "Other.forward = Net.forward\n",
                   SOURCE.replace("UNUSED = 3", "UNUSED = torch.zeros(3)"),
                   SOURCE.replace("import torch\n", "import torch\nimport math\n")):
        after = keys(edited)
        assert after["Net"].digest != before["Net"].digest, edited
        assert after["Other"].digest != before["Other"].digest, edited


def test_a_definition_that_names_the_class_counts_for_it() -> None:
    before = keys(SOURCE)
    after = keys(SOURCE + "\ndef build():\n    return Net()\n")
    assert after["Net"].digest != before["Net"].digest
    assert after["Other"] == before["Other"]


def test_files_that_reach_names_other_ways_have_no_keys() -> None:
    for extra in ("globals()['SCALE'] = 3\n", "from math import *\n",
                  "import sys\nsys.modules[__name__].SCALE = 3\n",
                  "def __getattr__(name):\n    return 1\n",
                  "DEVICE = 'cuda'\n"):
        assert keys(SOURCE + extra) == {}, extra


def test_a_class_bound_twice_has_no_key() -> None:
    assert "Other" not in keys(SOURCE + "\nclass Other(nn.Module):\n    pass\n")


def test_lines_added_to_code_the_class_does_not_reach_keep_its_key() -> None:
    before = keys(SOURCE)
    after = keys(SOURCE.replace("    return x * SCALE\n",
                                "    if x.sum() > 0:\n        return x\n    return x * SCALE\n"))
    assert after["Other"].digest == before["Other"].digest
    assert after["Other"].first_line == before["Other"].first_line + 2
