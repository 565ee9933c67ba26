"""When a compile on meta is made again on fake CPU tensors, as real torch runs the code on the
CPU: where the run stopped at what only the meta device lacks (a meta tensor meeting a CPU
tensor the code made, a tensor torch made from Python data that stayed meta, an operator
without a meta kernel), with the note that says so."""

from __future__ import annotations

from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.meta import meta_limits

#: Said of a class compiled on fake CPU tensors because its code makes CPU tensors of its own.
ON_FAKE_CPU = ("Compiled on fake CPU tensors: forward makes CPU tensors of its own, which meta "
               "weights would meet.")
#: Said of a class compiled on fake CPU tensors because a tensor torch makes from Python data
#: stays a plain meta tensor beside dynamo's fake ones.
ON_FAKE_CPU_DATA = ("Compiled on fake CPU tensors: torch makes a tensor from Python data in "
                    "forward (an index list) that stays meta, and unfaked, beside meta weights.")
#: Said of a class compiled on fake CPU tensors because an operator it runs has no meta kernel.
ON_FAKE_CPU_KERNEL = ("Compiled on fake CPU tensors: forward runs {op}, which has a CPU kernel "
                      "and no meta kernel.")


def fake_cpu_reason(ending_error: BaseException | None,
                    stops: list[tuple[RecordedFailure, meta_limits.MetaLimit]]) -> str | None:
    """Why the run is to be made again on fake CPU tensors, where it stopped at what only the
    meta device lacks (the module's docstring); None where it did not."""
    errors = [ending_error] if ending_error is not None else []
    limits = [limit for _, limit in stops] + [
        limit for limit in map(meta_limits.needs_real_data, errors) if limit is not None]
    if any(meta_limits.collides_with_cpu(error) for error in errors) or any(
            limit.what.startswith(meta_limits.BESIDE_CPU) for limit in limits):
        return ON_FAKE_CPU
    if any(meta_limits.unfaked_meta_tensor(error) for error in errors):
        return ON_FAKE_CPU_DATA
    op = next((limit.operator for limit in limits if limit.operator is not None), None)
    return ON_FAKE_CPU_KERNEL.format(op=f"`{op}`") if op is not None else None


def stopped_for_real_data(ending_error: BaseException | None,
                           stops: list[tuple[RecordedFailure, meta_limits.MetaLimit]]) -> bool:
    """Whether the run stopped where only real data goes on."""
    return bool(stops) or (ending_error is not None
                           and meta_limits.needs_real_data(ending_error) is not None)
