"""The values of tensors computed from tensors whose values are known, while torch.fx traces.

torch.fx traces parameters and inputs, not buffers: code that computes on a buffer
(``if self.count > 0:``, ``if (self.step == 0).all():``, ``self.initialized.fill_(1)``) runs
eagerly during plain torch.fx's trace on the CPU, on the buffer's real data, and a condition on
the result takes the branch that data says. fx-lsp's instance holds meta tensors; where their
data is known (made from Python data or filled with a number, ``literal_values``), this mode
computes each operation on them once more on the CPU, from that data, and keeps the result's
data for the meta result, so that the stand-ins read back the number the CPU reads instead of
a "true" or a one of their own. An operation that writes a known tensor in place keeps the
tensor's new data. Nothing else changes: the meta operation runs as ever and gives the value
the code goes on with; the CPU's copy is made only where every tensor the operation is given
is known (never for a Proxy, a parameter or an input), and only its data is kept, for a result
of at most ``_MOST`` elements. Random draws in that copy come from a forked generator, so the
trace draws what it draws without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map_only

from fxcore.worker.meta.literal_values import keep_literal, literal_of

#: The most elements a computed result's kept data has: flags, counters and small tables.
_MOST = 64


def _on_cpu(values: Any) -> tuple[Any, dict[int, torch.Tensor]] | None:
    """``values`` with each tensor a CPU tensor of its known data (and those copies by the
    tensor's id); None where a tensor's data is unknown or a value is not a plain one."""
    copies: dict[int, torch.Tensor] = {}
    for leaf in tree_flatten(values)[0]:
        if isinstance(leaf, torch.Tensor):
            known = literal_of(leaf)
            if known is None or leaf.requires_grad:
                return None
            copies[id(leaf)] = torch.tensor(known, dtype=leaf.dtype)
        elif isinstance(leaf, (torch.device, torch.fx.Proxy)) or callable(leaf):
            return None
    if not copies:
        return None
    return tree_map_only(torch.Tensor, lambda tensor: copies[id(tensor)], values), copies


def _kept(meta: Any, cpu: Any) -> None:
    """Keep each CPU result's data for the meta result in its place, where they match."""
    metas, cpus = tree_flatten(meta)[0], tree_flatten(cpu)[0]
    if len(metas) != len(cpus):
        return
    for meta_result, cpu_result in zip(metas, cpus, strict=True):
        if isinstance(meta_result, torch.Tensor) and isinstance(cpu_result, torch.Tensor) \
                and meta_result.shape == cpu_result.shape \
                and meta_result.dtype == cpu_result.dtype and cpu_result.numel() <= _MOST:
            keep_literal(meta_result, cpu_result.tolist())


class _Computing(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        on_cpu = _on_cpu((args, kwargs))  # before an in-place operation changes the data
        result = func(*args, **kwargs)
        if on_cpu is None:
            return result
        (cpu_args, cpu_kwargs), copies = on_cpu
        try:
            with torch.random.fork_rng(devices=[]):
                cpu_result = func(*cpu_args, **cpu_kwargs)
        except Exception:  # the CPU refuses what meta took: nothing is known of the result
            return result
        _kept(result, cpu_result)
        # A tensor written in place holds the CPU's new data now (its version moved on).
        for leaf in tree_flatten((args, kwargs))[0]:
            if isinstance(leaf, torch.Tensor) and literal_of(leaf) is None \
                    and id(leaf) in copies and copies[id(leaf)].numel() <= _MOST:
                keep_literal(leaf, copies[id(leaf)].tolist())
        return result


@contextlib.contextmanager
def computed_literals() -> Iterator[None]:
    """Keep the data of what the block computes from tensors of known data (the module's
    docstring)."""
    with _Computing():
        yield
