"""The export mode's one door into torch's private internals, and the one place that says what
this torch lacks of them. Each ``missing_*`` function detects a feature (never a version)
and returns why it cannot be used here, or None when it can; the capture degrades with that
reason as a note (a new torch release that moves one changes this module only).

- fake CPU tensors: ``torch._subclasses.fake_tensor.FakeTensorMode`` with a
  ``torch.fx.experimental.symbolic_shapes.ShapeEnv`` (what torch.export makes itself);
- resuming after a data-dependent guard: ``ShapeEnv.evaluate_expr`` raising
  ``GuardOnDataDependentSymNode``, wrapped to answer with a guess (``guesses``);
- the line that added a guard on a dynamic dimension: ``ShapeEnv._log_guard`` and
  ``ShapeEnv.source_to_var`` (``dynamic``);
- strict export: ``torch._dynamo`` importable and supporting this Python (``strict``);
- the check of the exported program's constants that torch skips on fake inputs:
  ``torch._export.config.error_on_lifted_constant_tensors`` and
  ``torch.export._trace._is_bogus_const_name`` (``fake_constants``).
"""

from __future__ import annotations

from collections.abc import Callable

try:
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
except ImportError:  # private to torch: a release may move it
    FakeTensor = None  # type: ignore[assignment,misc]
    FakeTensorMode = None  # type: ignore[assignment,misc]
try:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, ShapeEnv
except ImportError:  # a torch without the symbolic shapes of torch.export
    GuardOnDataDependentSymNode = None  # type: ignore[assignment,misc]
    ShapeEnv = None  # type: ignore[assignment,misc]


def missing_fake_tensors() -> str | None:
    """Why this torch cannot make fake CPU tensors here, or None when it can."""
    if FakeTensorMode is None or ShapeEnv is None:
        return ("torch._subclasses.fake_tensor.FakeTensorMode or "
                "torch.fx.experimental.symbolic_shapes.ShapeEnv is missing")
    return None


def missing_guess_hook() -> str | None:
    """Why this torch cannot recover from data-dependent guards, or None when it can."""
    if GuardOnDataDependentSymNode is None or ShapeEnv is None:
        return ("torch.fx.experimental.symbolic_shapes has no ShapeEnv or "
                "GuardOnDataDependentSymNode")
    if not callable(getattr(ShapeEnv, "evaluate_expr", None)):
        return "ShapeEnv.evaluate_expr is missing"
    return None


def missing_guard_log() -> str | None:
    """Why this torch cannot say which line added a guard, or None when it can."""
    if ShapeEnv is None:
        return "torch.fx.experimental.symbolic_shapes has no ShapeEnv"
    if not callable(getattr(ShapeEnv, "_log_guard", None)):
        return "ShapeEnv._log_guard is missing"
    if not hasattr(ShapeEnv(), "source_to_var"):
        return "ShapeEnv.source_to_var is missing"
    return None


def missing_strict_export() -> str | None:
    """Why this torch and Python cannot export strictly, or None when they can."""
    try:
        import torch._dynamo
    except ImportError as error:
        return f"torch._dynamo cannot be imported ({error})"
    supported = getattr(torch._dynamo, "is_dynamo_supported", None)
    if callable(supported) and not supported():
        return "torch._dynamo does not support this Python"
    return None


def made_up_constant_test() -> Callable[[str], bool] | str | None:
    """torch's test of a constant's name that export made up for a tensor it did not trace
    (``lifted_tensor_0``), when this torch's non-strict export raises on such a constant that
    is a fake tensor; None when it does not (no such check, or
    ``error_on_lifted_constant_tensors`` off: only a warning); else why the check cannot be
    made here."""
    try:
        import torch._export.config as export_config
        import torch.export._trace as trace
    except ImportError as error:
        return f"torch.export's internals cannot be imported ({error})"
    if not getattr(export_config, "error_on_lifted_constant_tensors", False):
        return None
    test = getattr(trace, "_is_bogus_const_name", None)
    if not callable(test):
        return "torch.export._trace._is_bogus_const_name is missing"
    if FakeTensor is None:
        return "torch._subclasses.fake_tensor.FakeTensor is missing"
    return test  # type: ignore[no-any-return]
