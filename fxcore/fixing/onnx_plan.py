"""The quick fixes of the onnx mode's failures: where a later opset has the operator's
translation (FX602), the opset upgrade the message names, made in ``[tool.fx-lsp]`` so that
fx-lsp then checks that export (``torch.onnx.export(..., opset_version=)`` in the user's
own export script is theirs to change)."""

from __future__ import annotations

import functools
import re

from fxcore.fixing import pyproject_fixes
from fxcore.fixing.fix import Fix, RootOf, pyproject
from fxcore.model.results import Failure, ModuleResult

#: How FX602's message names the opset (``fxcore.worker.capture.onnx.operators``).
_OPSET = re.compile(r"set onnx-opset = (\d+)")


def fixes_of(failure: Failure, module: ModuleResult | None, root_of: RootOf) -> list[Fix]:
    found = _OPSET.search(failure.message)
    if failure.kind != "onnx-needs-newer-opset" or found is None or module is None:
        return []
    opset = int(found.group(1))
    return [Fix(f"Check the ONNX export at opset {opset} (onnx-opset, pyproject.toml)",
                pyproject(module, root_of),
                functools.partial(pyproject_fixes.set_onnx_opset, opset=opset), True,
                safe=False)]  # the exported model then needs a runtime with that opset
