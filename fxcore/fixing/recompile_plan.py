"""Which quick fixes fit a recompilation of torch.compile (the FX505-FX507 hints of compile
mode's loop of calls; ``fix_plan`` asks here for them): only what PyTorch names and what,
applied to the corpus (``tests/test_recompile_fixes.py``), makes real torch.compile compile
fewer frames with the same calls.

- FX505 whose guard carries torch's hint naming a config option (an integer attribute of the
  module that ``forward`` changes: ``torch._dynamo.config.allow_unspec_int_on_nn_module =
  True``): that option, set after the file's imports (``recompile_fixes``).

Not offered, because real torch then compiles as many frames or stops compiling the frame at
all (measured on the corpus with torch 2.13): ``dynamic=True`` or
``torch._dynamo.mark_dynamic`` for FX506/FX507 (the code specialises the size or number
again, a marked dimension raises instead), and a tensor buffer for an FX505 counter (a counter
read as a Python int, a slice bound, leaves no graph; one read by a branch breaks the graph).
"""

from __future__ import annotations

import functools
import re

from fxcore.fixing import pt2_fixes, recompile_fixes
from fxcore.fixing.fix import Fix
from fxcore.model.results import Hint

#: A boolean config option as torch's recompile hints name it
#: (``torch._dynamo.config.allow_unspec_int_on_nn_module = True``).
_NAMED_OPTION = re.compile(
    r"\b(?P<option>torch\.(?:_dynamo|compiler)\.config\.[A-Za-z_]\w*) = (?P<value>True|False)\b")


def fixes_of(hint: Hint) -> list[Fix]:
    """The fixes of a recompile hint, the one ``--fix`` makes first."""
    if hint.kind != "recompiles-every-call":
        return []
    named = _NAMED_OPTION.search(hint.message)
    if named is None:
        return []
    option, value = named.group("option"), named.group("value") == "True"
    return [Fix(f"Set {option} = {value} after the imports, as torch's hint says (for every "
                "torch.compile in the process)", hint.path,
                functools.partial(recompile_fixes.set_config_option, option=option,
                                  value=value),
                True, safe=False,  # a process-wide setting: every compiled module sees it
                import_edit=pt2_fixes.ensure_torch_import)]
