"""One mode's verdict on a built instance, as the pipeline leads it through the stages: in
each ``nn.Module`` mode the ``module-mode`` setting chooses (``module_modes``), the example
inputs decided first for a mode that needs them (the inputs stage, on the graph of a
pre-trace with the fx capture), then the capture itself, then the verdict on its record
(``verdict``) and the check of fx-lsp's own choices (``inputs.eager_runs.own_choices``). A class
whose code reads that its tensors are on meta is judged again, on fake tensors of its device
(``devices.meta_branches``)."""

from __future__ import annotations

import dataclasses

from fxcore.model.results import ModuleResult
from fxcore.worker.building.as_built import as_built
from fxcore.worker.building.instances import Built
from fxcore.worker.capture.base import Capture, needs_inputs
from fxcore.worker.capture.fx.pre_trace import pre_trace
from fxcore.worker.capture.raised_everywhere import raised_everywhere_record
from fxcore.worker.devices import cuda_view, meta_branches
from fxcore.worker.devices.cuda_view import gap_notes
from fxcore.worker.devices.fake_device import CPU
from fxcore.worker.devices.fake_device import judged_device as view_device
from fxcore.worker.devices.meta_branches import MetaBranch
from fxcore.worker.devices.meta_reads import described, meta_reads
from fxcore.worker.inputs.deciding import finish_search, start_search
from fxcore.worker.inputs.eager_runs.key_sets import merged_key_sets
from fxcore.worker.inputs.eager_runs.own_choices import judged_on_own_choices
from fxcore.worker.job.capture_target import CaptureTarget, ExportOutcome
from fxcore.worker.job.input_refusals import refusals_kept
from fxcore.worker.job.inputs_decision import UNDECIDED, InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.module_modes.judging import judged
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.worker.running.seeding import seed_generators

#: The note on an export or compile verdict of a class judged for a GPU.
GPU_NOTE = ("Judged for a GPU (CUDA), as its code is written or `device` says ([tool.fx-lsp], "
            "per-file-device or the class's table): on fake CUDA tensors, with torch.cuda "
            "answering as one GPU would; no GPU was used.")


def built_verdict(context: JobContext, capture: Capture, target: CaptureTarget,
                  built: Built) -> ModuleResult:
    """Capture a built instance with one mode and make its verdict, with what building it
    met (argument sets the constructor rejected, its weights); none where it branches on meta
    and could not be built on fake tensors instead (``meta_branches``)."""
    if built.meta_branch is not None and built.meta_branch.failure is not None:
        return context.module_result(
            target.cls, target.source, status="not-traced", mode=capture.mode,
            reason=built.meta_branch.no_verdict_reason(target.cls.__name__,
                                                       view_device() or CPU),
            arguments=built.arguments)
    result = mode_verdict(context, capture, target)
    if built.meta_branch is None and target.meta_read is not None:
        # Met in a capture: what the instance's other uses (its submodules) are judged on.
        built.meta_branch = MetaBranch(target.meta_read)
    result.arguments = built.arguments
    if built.rejected_before:
        result.capture_notes.append(f"The constructor rejected the argument sets tried "
                                    f"before this one: {built.rejected_before}.")
    if built.weights_note:
        result.capture_notes.append(built.weights_note)
    if built.weights_skipped:
        result.weights = "skipped"
    return result


def mode_verdict(context: JobContext, capture: Capture, target: CaptureTarget) -> ModuleResult:
    """Capture ``target`` with ``capture`` and make that mode's verdict, in the
    ``nn.Module`` modes the ``module-mode`` setting chooses for it (``module_modes``). Where
    its code reads a tensor as on meta (``meta_reads``: as it was built, or in this mode's
    runs), on fake tensors of its device instead (``meta_branches``), as it runs there."""
    why = target.meta_read or meta_branches.active()
    if why is None:
        decided = target.inputs_decision
        with meta_reads() as reads:
            result = _mode_verdict(context, capture, target)
        if not reads:
            return result
        # The inputs this mode decided on meta were decided on the branch: again, on fake.
        target.inputs_decision = decided
        why = target.meta_read = described(reads)
    with meta_branches.on_fake_tensors(why):
        result = _mode_verdict(context, capture, target)
        device = view_device()
    assert device is not None
    result.capture_notes.append(meta_branches.note(why, device))
    return result


def _mode_verdict(context: JobContext, capture: Capture, target: CaptureTarget
                  ) -> ModuleResult:
    """``mode_verdict`` on the tensors the view entered now gives (meta, or fake ones)."""

    def in_current_mode(loop: bool) -> ModuleResult:
        # Each capture meets the instance as built: the search's runs and this
        # capture's leave no state behind (``as_built``), and each starts from the seeded
        # generators, so what forward draws does not depend on what ran before.
        with as_built(target.module) as put_back:
            seed_generators()
            inputs = decide_before_capture(context, capture, target)
            results: list[tuple[InputsDecision, ModuleResult]] = []
            first_exports: dict[bool, ExportOutcome] = {}
            # Each other input set (a dict's keys read only where present, left out) is
            # captured too; what the mode leaves on the target (export's program) is the first's.
            sets = [inputs, *(inputs.alternatives if needs_inputs(capture) else ())]
            for one_set in sets:
                put_back()
                seed_generators()
                # The same error on every input tried is the verdict of a mode that runs forward.
                record = raised_everywhere_record(context, target, capture.mode, one_set.raised) \
                    if one_set.raised is not None and needs_inputs(capture) else \
                    capture.capture(context, target, one_set, loop_of_calls=loop)
                result = module_verdict(context, capture, target, one_set, record)
                seed_generators()  # its eager runs draw what the capture drew
                results.append((one_set, judged_on_own_choices(context, capture.mode, target,
                                                               one_set, result)))
                if len(results) == 1:
                    first_exports = dict(target.exports)
            target.exports.clear()
            target.exports.update(first_exports)
            result = merged_key_sets(results) if len(results) > 1 else results[0][1]
        result.mode = capture.mode
        return result

    result = judged(context.job.config.module_mode, capture.mode, target.module,
                    in_current_mode, context.job.config.timeout, context.job.loop_of_calls)
    if capture.mode != "fx" and cuda_view.active():
        result.capture_notes.append(GPU_NOTE)
        result.capture_notes.extend(gap_notes())
    return result


def decide_before_capture(context: JobContext, capture: Capture,
                          target: CaptureTarget) -> InputsDecision:
    """``target``'s example inputs for ``capture``: decided when it needs them, once per
    target (``inputs.deciding``; unless configured, inferred from the fx capture's graph of
    it), and kept on the target for the modes after it, which reuse them whether they need
    them or not."""
    if target.inputs_decision is not None:
        return target.inputs_decision
    # A mode that does not declare it captures without inputs, as fx does.
    if not needs_inputs(capture):
        return UNDECIDED
    search = start_search(context, target)
    graph_module, root = (None, None) if search.configured else pre_trace(context, target)
    with refusals_kept() as raised_everywhere:
        decision = finish_search(context, target, search, graph_module, root)
    if decision.specs is None and raised_everywhere:
        # The same error on every input tried: that is the class's verdict.
        decision = dataclasses.replace(decision, raised=raised_everywhere[0])
    target.inputs_decision = decision
    return target.inputs_decision
