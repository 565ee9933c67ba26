"""A fix proven on compiled outputs, not on eager ones alone: the code before and after the fix,
built with the same seeded weights and called on the same inputs, eagerly and through real
``torch.compile`` with each backend of ``proof_backends()`` (``aot_eager``, and ``inductor``
where it builds on this machine's CPU); the outputs after are those before, eager and compiled,
and each compiled output is its eager one.

``fix_all_outputs`` measures whole corpus files this way in processes of their own (a fixed
file may set ``torch._dynamo.config`` options as it is imported); ``assert_outputs_kept`` does
it in this process for code a fix test builds itself."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

#: The backends every fix is proven with; inductor is added where it builds here.
BASE_BACKENDS = ("aot_eager",)
#: The seeds of the weights, of the inputs and of each call (random layers draw alike).
WEIGHTS_SEED, CALL_SEED = 0, 2

# Inductor compiles in the process itself: a pool of compile workers costs more to start, on a
# machine of two cores, than the fix tests' small graphs take to compile (set before torch's
# inductor reads it, and inherited by the processes that measure a corpus file).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

#: A tiny function compiled by inductor in a process of its own: it needs a C++ compiler and
#: the headers torch's CPU code generation includes, which a machine may lack.
_PROBE = """
import torch
compiled = torch.compile(lambda x: (x.sin() + 1).sum(0), backend="inductor")
x = torch.randn(3, 4)
assert torch.allclose(compiled(x), (x.sin() + 1).sum(0))
"""


@functools.cache
def inductor_unavailable() -> str | None:
    """Why inductor cannot compile on this machine's CPU (its error), or None."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=600, check=False)
    except subprocess.TimeoutExpired:
        return "inductor's CPU build of a one-line function ran past 600 s"
    if done.returncode == 0:
        return None
    # The error's own line (``InductorError: ModuleNotFoundError: No module named
    # 'setuptools'``), not the hints torch prints after it.
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"[\w.]+(Error|Exception): ", line)]
    said = (errors or lines or [f"exit status {done.returncode}"])[-1]
    return f"inductor does not build on this CPU: {said}"


def proof_backends() -> tuple[str, ...]:
    """``aot_eager``, and ``inductor`` where it builds here; where it does not, a warning says
    why (the proof then stands on ``aot_eager`` alone). The torch matrix's other series set
    ``FX_LSP_PROOF_INDUCTOR=0``: inductor's CPU builds there would take CI past its time, and
    its proof is made on the main series, whose tiers run every fix test."""
    why_not = "FX_LSP_PROOF_INDUCTOR=0 (made on the main series)" \
        if os.environ.get("FX_LSP_PROOF_INDUCTOR") == "0" else inductor_unavailable()
    if why_not is None:
        return (*BASE_BACKENDS, "inductor")
    warnings.warn(f"fix not proven with inductor: {why_not}", stacklevel=2)
    return BASE_BACKENDS


def same(a: object, b: object, atol: float = 1e-5) -> bool:
    """Equal outputs, floats up to rounding (a masked reduction adds in another order, and
    inductor fuses; ``atol`` the absolute part): tensors of one dtype and shape, sequences item
    by item, else ``==``."""
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and (
            torch.equal(a, b) if not a.is_floating_point()
            else torch.allclose(a, b, rtol=1e-5, atol=atol, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y, atol) for x, y in zip(a, b, strict=True))
    return a == b


def _called(build: Callable[[], Callable[..., Any]], calls: Sequence[tuple[Any, ...]],
            backend: str | None) -> list[Any]:
    """What ``build()`` (seeded) returns for each of ``calls`` in turn (arguments cloned; its
    state kept between them, as a loop keeps it), compiled with ``backend`` (dynamo reset
    before and after) or eagerly."""
    import torch
    import torch._inductor.config

    torch.manual_seed(WEIGHTS_SEED)
    target = build()
    torch._dynamo.reset()
    try:
        if backend is not None:
            target = torch.compile(target, backend=backend)
        torch.manual_seed(CALL_SEED)
        # Inductor draws random numbers with its own generator unless told to fall back to
        # eager's: a layer drop or dropout would then differ by the draw, not by the fix.
        with torch.no_grad(), torch._inductor.config.patch(fallback_random=True):
            return [target(*(value.clone() if isinstance(value, torch.Tensor) else value
                             for value in arguments)) for arguments in calls]
    finally:
        torch._dynamo.reset()


def assert_outputs_kept(before: Callable[[], Callable[..., Any]],
                        after: Callable[[], Callable[..., Any]],
                        calls: Sequence[tuple[Any, ...]], *,
                        before_compiles_wrong: bool = False) -> dict[str, list[Any]]:
    """The code ``after`` a fix gives the outputs of the code ``before`` it, eagerly and
    compiled with each of ``proof_backends()``, for each of ``calls`` (argument tuples, made in
    turn on one built object); the code before compiles to its eager outputs too, unless
    ``before_compiles_wrong`` (real torch's own silent error, which the fix avoids). ``before``
    and ``after`` build what is called (a module, a function), with the same seeded weights.
    Returns the outputs after the fix by backend (``"eager"`` for none)."""
    expected = _called(before, calls, None)
    assert same(_called(after, calls, None), expected), "eager outputs changed by the fix"
    found = {"eager": expected}
    for backend in proof_backends():
        if not before_compiles_wrong:
            assert same(_called(before, calls, backend), expected), \
                f"{backend}: the code before compiles to other outputs than its eager ones"
        now = _called(after, calls, backend)
        assert same(now, expected), f"{backend}: compiled outputs differ from those before"
        found[backend] = now
    return found
