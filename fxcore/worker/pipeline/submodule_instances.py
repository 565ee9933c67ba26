"""Tracing the workspace classes a traced root holds as submodules, as the very instances the
root built (origin "parent"), on the inputs the root passes them; and the instances a root's
other literal call sites build, for the classes only those build. Each verdict is sent as
("derived", ...): which verdict a class shows is decided on the host, over all files
(``fxcore.reporting.parent_arguments``)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable

import torch

from fxcore.model.instance_trust import parent_rank
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import Arguments, ExampleInputs, ModuleResult
from fxcore.protocol.worker_messages import Derived, Deriving, WorkerMessage
from fxcore.worker.building.class_roles import (
    has_own_arguments,
    not_a_model_reason,
    root_arguments,
)
from fxcore.worker.building.instances import Built, build_from_call_site
from fxcore.worker.capture.base import Capture, needs_inputs
from fxcore.worker.devices import meta_branches
from fxcore.worker.inputs.given.parent import PassedInputs, passed_inputs, passed_note
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.capturing import mode_verdict
from fxcore.worker.running.budget_clock import Budget
from fxcore.worker.running.seeding import seed_generators
from fxcore.workspace.discovery import ClassSource

#: At most this many distinct workspace classes are traced from one root's submodules, so a
#: huge model does not spend the whole scan on its parts (each still has the class time-out).
MAX_SUBMODULE_CLASSES_PER_ROOT = 24


class SubmoduleInstances:
    """What a job's roots built, traced after each root: the job, its context, its capture
    modes and where its verdicts go."""

    def __init__(self, job: TraceJob, context: JobContext, captures: list[Capture],
                 send: Callable[[WorkerMessage], None]) -> None:
        self.job = job
        self.context = context
        self.captures = captures
        self.send = send

    def trace_built(self, root_results: list[ModuleResult], built: Built,
                               not_derived: set[type], derived_ranks: dict[type, int]) -> None:
        """Trace each workspace class that the built root holds as a submodule, as the very
        instance the root built, and send its verdict (``Derived``).

        Classes in ``not_derived``, configured classes, classes of files outside the job's
        ``derived_paths`` and classes whose constructor needs no arguments are skipped: their
        own verdict takes precedence over a parent's (or no report shows one). So is a class an
        earlier root of the file built, unless this root is more trusted (its own arguments
        came from an earlier source: ``parent_rank``), whatever the file order.

        Each is traced on the inputs the root passes it, recorded by running the root once on
        its own example inputs (``inputs.given.parent``); where that fails, on inputs inferred for
        it alone. A root whose code branches on meta is run, and its submodules judged, on
        fake tensors, as the root is (``devices.meta_branches``)."""
        branch = built.meta_branch
        with meta_branches.on_fake_tensors(branch.read) \
                if branch is not None and branch.failure is None else contextlib.nullcontext():
            self._trace_built(root_results, built, not_derived, derived_ranks)

    def _trace_built(self, root_results: list[ModuleResult], built: Built,
                     not_derived: set[type], derived_ranks: dict[type, int]) -> None:
        context = self.context
        root = root_results[0]
        parent_arguments = root.arguments or root_arguments(context, root.class_name)
        rank = parent_rank(parent_arguments.origin)
        started = Budget()
        chosen = self.submodules_to_trace(built.model, not_derived, derived_ranks, rank)
        if not chosen:
            return
        root_inputs = next((result.inputs for result in root_results if result.inputs), None)
        # Half the class's time: the engine stops a child silent for the whole of it. The
        # root's run draws from the seeded generators, as its own captures do.
        seed_generators()
        passed = passed_inputs(built.model, root_inputs, built.concrete_args,
                               built.instantiated_on, [item[1] for item in chosen],
                               self.job.config.timeout / 2)
        for path, submodule, located in chosen:
            if started.spent() > self.job.config.timeout:
                return  # the classes left may still come from the file's next root
            derived_ranks[type(submodule)] = rank
            for capture in self.captures:
                self.send(Derived(self.trace_submodule(
                    capture, root, parent_arguments, path, submodule, *located,
                    passed=passed, root_inputs=root_inputs)))

    def submodules_to_trace(self, model: torch.nn.Module, not_derived: set[type],
                            derived_ranks: dict[type, int], rank: int
                            ) -> list[tuple[str, torch.nn.Module, tuple[str, ClassSource]]]:
        """(path, instance, (file, source)) of the first instance of each workspace class
        ``model`` holds that this root traces (see ``trace_built``), at most
        ``MAX_SUBMODULE_CLASSES_PER_ROOT``."""
        context = self.context
        chosen: list[tuple[str, torch.nn.Module, tuple[str, ClassSource]]] = []
        seen: set[type] = set()
        for path, submodule in model.named_modules():
            cls = type(submodule)
            if not path or cls in seen or cls in not_derived \
                    or derived_ranks.get(cls, rank + 1) <= rank:
                continue
            located = context.workspace_class_source(cls)
            reported = self.job.derived_paths
            if located is None or (reported is not None and located[0] not in reported) \
                    or has_own_arguments(context, cls, located[0], submodule) \
                    or context.is_skipped(*located) \
                    or not_a_model_reason(context.in_file(located[0]), cls, located[1]):
                not_derived.add(cls)
                continue
            if len(chosen) >= MAX_SUBMODULE_CLASSES_PER_ROOT:
                break  # the classes left may still come from the file's next root
            seen.add(cls)
            chosen.append((path, submodule, located))
        return chosen

    def trace_other_call_sites(self, cls: type, root_results: list[ModuleResult],
                               not_derived: set[type], derived_ranks: dict[type, int]) -> None:
        """Build the root from each of its other literal call sites (``Decoder(...,
        alibi_pos_bias=True)`` after ``Decoder(...)``), on the meta device only, and trace
        the workspace classes that instance holds and no root traced so far: their
        parent-built instances, at the rank of a call site. The root's own verdict stays on
        the instance it was captured as."""
        module_config = self.context.module_config(cls.__name__)
        # The class itself is called, as at the call site, even where a factory is configured.
        called = dataclasses.replace(module_config, factory=None)
        for site in self.job.other_call_sites.get(cls.__name__, ()):
            seed_generators()  # built from the same state as the class's own instance
            built = build_from_call_site(cls, called, site, meta_only=True)
            if isinstance(built, BaseException):
                continue  # a call site this version of the class does not accept
            self.trace_built(
                [dataclasses.replace(result, arguments=built.arguments, instantiated_on="meta")
                 for result in root_results],
                built, not_derived, derived_ranks)
            del built

    def trace_submodule(self, capture: Capture, root: ModuleResult,
                        parent_arguments: Arguments, path: str, submodule: torch.nn.Module,
                        file: str, source: ClassSource, passed: PassedInputs,
                        root_inputs: ExampleInputs | None) -> ModuleResult:
        """One submodule's verdict of one mode, located and named in its class's own file,
        on the inputs the root passes it when they were recorded."""
        in_file = self.context.in_file(file)
        cls = type(submodule)
        arguments = Arguments(
            origin="parent",
            args=parent_arguments.args,
            kwargs=parent_arguments.kwargs,
            parent=root.qualified_name,
            path=path,
            parent_origin=parent_arguments.origin,
            builder=parent_arguments.builder,
            site=parent_arguments.site,
        )
        # The engine turns this into a time-out (or crash) verdict if tracing never returns.
        self.send(Deriving(in_file.module_result(cls, source, status="failed",
                                                  arguments=arguments, mode=capture.mode)))
        module_config = in_file.module_config(cls.__name__)
        target = CaptureTarget(cls, source, submodule, root.instantiated_on or "meta",
                               module_config.concrete_args, arguments=arguments)
        recorded = passed.inputs.get(id(submodule))
        values = passed.values.get(id(submodule), {})
        if values and not needs_inputs(capture):
            # Only the modes that run forward are given literals: a graph's shapes would be
            # propagated without them.
            recorded = None
        # Its own configured inputs come first, decided as for any class.
        if not module_config.inputs and recorded is not None and root_inputs is not None:
            target.inputs_decision = InputsDecision(
                recorded, "parent", passed_note(root.class_name, path, root_inputs, passed.read),
                values)
        elif not module_config.inputs:
            target.parent_inputs_missing = passed.reason(submodule) or (
                f"it is called with {', '.join(values)} besides tensors")
        result = mode_verdict(in_file, capture, target)
        result.arguments = arguments
        return result
