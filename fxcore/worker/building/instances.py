"""Building the instance a class is captured as, from its arguments' sources in order of
trust: the configured call (``call``, ``factory``, ``args``/``kwargs``), the constructor's own
defaults, a builder function of its module (``fxcore.workspace.builders``), a literal call site in
the
workspace, configuration classes, guessed arguments. (Instances a traced root built come
between builders and call sites: the host decides those, ``fxcore.reporting.parent_arguments``.)

``build_class`` gives a ``Built`` instance, or the class's verdict when no instance could be
built (the constructor raised: FX101; arguments are needed and none fit: not traced). Which
capture mode then takes the instance is no concern of this module.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from fxcore.model.job_spec import CallSite, ModuleConfig
from fxcore.model.results import ArgumentOrigin, Arguments, InstantiatedOn, ModuleResult
from fxcore.worker.building.argument_search import (
    Tried,
    consistent_sets,
    constructor_defaults,
    searched_instance,
    tried_text,
)
from fxcore.worker.building.arguments import (
    call_site_values,
    candidate_calls,
    class_namespace,
    default_overrides,
    guess_value,
    missing_from_type_error,
    value_source,
)
from fxcore.worker.building.construction import build, configured_call_note, missing_parameters
from fxcore.worker.building.download_free import download_note, offline_note, weights_off
from fxcore.worker.building.forward_uses import ForwardMisfit, misfit, misfit_reason
from fxcore.worker.building.init_checks import named_in_message
from fxcore.worker.building.optional_imports import optional_package_note
from fxcore.worker.devices.meta_branches import MetaBranch
from fxcore.worker.job.job_context import JobContext, describe_exception
from fxcore.workspace.discovery import ClassSource


@dataclass
class Built:
    """An instance ready to capture, and how it was made."""

    model: torch.nn.Module
    instantiated_on: InstantiatedOn
    #: Building tried to load pretrained weights and was given none.
    weights_skipped: bool
    arguments: Arguments
    #: ``concrete-args`` configured for the class.
    concrete_args: dict[str, Any]
    #: The argument sets the constructor rejected before this one, in words (the search).
    rejected_before: str = ""
    #: Which weights parameters were set to none because building downloaded (a note).
    weights_note: str = ""
    #: Where building, or a capture of the instance, read a tensor as on meta: it is judged
    #: on fake tensors (``meta_branches``), or has no verdict where the fake build failed.
    meta_branch: MetaBranch | None = None


def build_class(context: JobContext, cls: type, source: ClassSource) -> Built | ModuleResult:
    """The class built from the most trusted source of arguments that works, or its verdict
    when none does."""
    module_config = context.module_config(cls.__name__)
    if module_config.call is not None:
        try:
            args, kwargs = call_site_values(module_config.call, class_namespace(cls))
        except Exception as error:
            failure = context.exception_failure(
                "constructor", "The configured call could not be evaluated: ", error,
                source.name_span)
            return context.module_result(cls, source, status="failed", failures=[failure])
        module_config = dataclasses.replace(module_config, args=args, kwargs=kwargs)
    configured = bool(module_config.factory or module_config.args or module_config.kwargs
                      or module_config.call)
    missing = [] if module_config.factory else missing_parameters(cls, module_config.args,
                                                                   module_config.kwargs)
    if not missing:
        arguments = Arguments(
            origin="config" if configured else "defaults",
            args=[value_source(value) for value in module_config.args],
            kwargs={name: value_source(value) for name, value in module_config.kwargs.items()},
        )
        try:
            constructed = build(cls, module_config)
            if not configured and (refused := misfit(cls, constructed.model)) is not None:
                raise refused  # ``decoder=None`` that ``forward`` calls: the next sources
        except BaseException as error:
            # A constructor that forwards **kwargs to a base class needing arguments.
            missing = [] if configured else missing_from_type_error(error)
            overrides = {} if configured else weights_off(cls, module_config, error)
            if not missing and overrides:
                # Defaults that download pretrained weights: the library's own parameters
                # build it without them (``download_free``).
                offline = _build_with_candidate(cls, module_config, overrides, "defaults",
                                                skipped=True)
                if isinstance(offline, Built):
                    offline.weights_note = offline_note(overrides)
                    return offline
                error = offline
            if not missing:
                # The defaults do not make a working instance (`either dim or codebook_size
                # must be given`): the module's builder, or a literal call, may.
                if not configured:
                    for built in _instances_after_defaults(context, cls, module_config):
                        return built
                    # A default that builds nothing the constructor needs (`drop_prob=None`
                    # passed to float(), `sequence_length=None` asserted): the table's value.
                    for table_values in default_overrides(cls, {}, _written(context, cls)) \
                            if context.job.config.guess_arguments else []:
                        guessed = _build_with_candidate(cls, module_config, table_values,
                                                        "guessed")
                        if isinstance(guessed, Built):
                            return guessed
                    # Defaults the class's own check rejects, its message naming the one to
                    # change ("please reduce the n_bins"): the search from those values.
                    searched = None if isinstance(error, ForwardMisfit) else searched_instance(
                        cls, [(named_in_message(describe_exception(error),
                                                constructor_defaults(cls)),
                               error)],
                        lambda kwargs: _build_with_candidate(cls, module_config, kwargs,
                                                             "guessed"))
                    if searched is not None:
                        searched.rejected_before = tried_text(cls.__name__, [({}, error)])
                        return searched
                    if isinstance(error, ForwardMisfit):  # built, but unfit: no verdict
                        return context.module_result(cls, source, status="not-traced",
                                                     reason=misfit_reason(
                                                         cls, _key(context, cls), error),
                                                     arguments=arguments)
                failure = context.exception_failure(
                    "constructor", optional_package_note(cls, [error])
                    + f"Building {cls.__name__} failed: ", error, source.name_span)
                if configured:
                    failure.message += configured_call_note(cls.__name__, module_config)
                failure.message += download_note(
                    cls, f"{context.location.module_name}:{cls.__name__}", error, overrides)
                return context.module_result(cls, source, status="failed",
                                             failures=[failure], arguments=arguments)
        else:
            return Built(constructed.model, constructed.instantiated_on,
                         constructed.weights_skipped, arguments, module_config.concrete_args,
                         meta_branch=constructed.meta_branch)
    return _build_with_found_arguments(context, cls, source, module_config, missing)


def _build_with_found_arguments(context: JobContext, cls: type, source: ClassSource,
                                module_config: ModuleConfig,
                                missing: list[str]) -> Built | ModuleResult:
    """Build with arguments from a literal call site, configuration classes or the name
    table (see ``fxcore.worker.building.arguments``), keeping the first set the constructor
    accepts; a builder
    function of the class's module comes first."""
    by_builder = _build_with_builder(context, cls, module_config)
    if isinstance(by_builder, Built):
        return by_builder
    builder_failure = "" if by_builder is None else (
        f" Building it with its module's builder functions failed ({by_builder}).")
    by_call_site = _build_with_call_site(context, cls, module_config)
    if isinstance(by_call_site, Built):
        return by_call_site
    rejected = by_call_site
    tried: Tried = []
    if context.job.config.guess_arguments:
        for candidate in candidate_calls(cls, missing, _written(context, cls)):
            built = _build_with_candidate(cls, module_config, candidate.kwargs,
                                          "guessed" if candidate.guessed else "config-class")
            forwarded = _forwarded_guesses(built, candidate.kwargs)
            if forwarded:
                # ``**kwargs`` passed on to a class that needs more (``GroupedResidualLFQ(dim,
                # **kwargs)`` building ``ResidualLFQ(num_quantizers=..., ...)``).
                built = _build_with_candidate(cls, module_config,
                                              {**candidate.kwargs, **forwarded}, "guessed")
            for overrides in [] if isinstance(built, Built) else default_overrides(
                    cls, {**module_config.kwargs, **candidate.kwargs}, _written(context, cls)):
                # A constructor that insists on a parameter its default leaves out
                # (``assert image_size is not None``): the table's value for it too.
                built = _build_with_candidate(cls, module_config,
                                              {**candidate.kwargs, **overrides}, "guessed")
                if isinstance(built, Built):
                    break
            if isinstance(built, Built):
                return built
            rejected = built
            tried.append((candidate.kwargs, built))
        # Then values that make the class's own checks true (``argument_search``).
        searched = searched_instance(cls, tried, lambda kwargs: _build_with_candidate(
            cls, module_config, kwargs, "guessed"))
        if searched is not None:
            searched.rejected_before = tried_text(cls.__name__, tried)
            return searched
        rejected = tried[-1][1] if tried else rejected
    key = _key(context, cls)
    names = ", ".join(missing)
    example = ", ".join(f"{name} = ..." for name in missing)
    listed = f" Argument sets tried: {tried_text(cls.__name__, tried)}." if len(tried) > 1 \
        else ""
    rejection = ("" if rejected is None else
                 f" Guessed arguments were rejected ({describe_exception(rejected)}).{listed}")
    misfits = [error for _, error in tried if isinstance(error, ForwardMisfit)]
    if misfits:  # no value fits: not built with a stand-in
        rejection = f" {misfits[0]}."
    errors = [error for _, error in tried] + ([rejected] if isinstance(rejected, BaseException)
                                              else [])
    return context.module_result(
        cls,
        source,
        status="not-traced",
        reason=(
            f"{optional_package_note(cls, errors)}"
            f"The constructor needs arguments: {names}.{builder_failure}{rejection} Give them in "
            f'pyproject.toml: [tool.fx-lsp.modules."{key}"] kwargs = {{{example}}}, '
            f"or name a factory there (factory = \"pkg.module:make_{cls.__name__}\")."
        ),
    )


def _key(context: JobContext, cls: type) -> str:
    return f"{context.location.module_name}:{cls.__name__}"


def _written(context: JobContext, cls: type) -> dict[str, tuple[str, ...]]:
    """Parameter -> the literal values the workspace's partly literal calls of ``cls`` give
    it (``TraceJob.keyword_values``)."""
    return context.job.keyword_values.get(cls.__name__, {})


def _forwarded_guesses(rejected: Built | BaseException,
                       kwargs: dict[str, Any]) -> dict[str, Any]:
    """The table's values for the arguments a rejected constructor's ``TypeError`` says are
    missing although it was given ``kwargs``: what it passed on through ``**kwargs`` needs
    them. Empty when the error is another, or one of them has no value in the table."""
    if isinstance(rejected, Built):
        return {}
    names = [name for name in missing_from_type_error(rejected) if name not in kwargs]
    values = {name: guess_value(name, None) for name in names}
    if any(value is inspect.Parameter.empty for value in values.values()):
        return {}
    return values


def _build_with_call_site(context: JobContext, cls: type,
                          module_config: ModuleConfig) -> Built | BaseException | None:
    """The class built with the arguments of its literal call site in the workspace; the
    error when they do not build it; None without a call site."""
    site = context.job.call_sites.get(cls.__name__)
    return None if site is None else build_from_call_site(cls, module_config, site)


def build_from_call_site(cls: type, module_config: ModuleConfig, site: CallSite,
                         meta_only: bool = False) -> Built | BaseException:
    """The class built with the arguments of a literal call site added to its
    configuration, or the error when they do not build it; ``meta_only`` for instances
    only their submodules are traced from (a root's other call sites)."""
    try:
        args, kwargs = call_site_values(site, class_namespace(cls))
        call = dataclasses.replace(module_config, args=[*module_config.args, *args],
                                   kwargs={**module_config.kwargs, **kwargs},
                                   factory=_alternate_constructor(cls, site.method))
        model, instantiated_on, weights, meta_branch = build(cls, call, meta_only)
        if type(model) is not cls:
            raise TypeError(f"{cls.__name__}.{site.method}() returned a "
                            f"{type(model).__qualname__}")
    except Exception as error:
        return error
    if call.factory:
        # ``build`` ran the method on the meta device and moved what it left elsewhere there.
        instantiated_on = "meta"
    arguments = Arguments(origin="call-site", site=site.site, args=list(site.args),
                          kwargs=dict(site.kwargs), builder=call.factory)
    return Built(model, instantiated_on, weights, arguments, module_config.concrete_args,
                 meta_branch=meta_branch)


def _alternate_constructor(cls: type, method: str | None) -> str | None:
    """``pkg.module:Class.method`` for a call site that calls a classmethod of the class
    (``EfficientNet.from_name('efficientnet-b0')``), None for one that calls the class;
    ``TypeError`` for a method that is not a classmethod (``Net.apply(fn)``)."""
    if method is None:
        return None
    if not isinstance(inspect.getattr_static(cls, method, None), classmethod):
        raise TypeError(f"{cls.__name__}.{method} is not a classmethod")
    return f"{cls.__module__}:{cls.__qualname__}.{method}"


def _build_with_candidate(cls: type, module_config: ModuleConfig, kwargs: dict[str, Any],
                          origin: ArgumentOrigin, skipped: bool = False) -> Built | BaseException:
    """The class built with found keyword arguments added to its configuration, or why not;
    again without pretrained weights where it tried to download them (``skipped``)."""
    call = dataclasses.replace(module_config, kwargs={**module_config.kwargs, **kwargs})
    try:
        model, instantiated_on, weights, meta_branch = build(cls, call)
    except Exception as error:
        overrides = weights_off(cls, call, error)
        if not overrides:
            return error
        built = _build_with_candidate(cls, module_config, {**kwargs, **overrides}, origin, True)
        if isinstance(built, Built):
            built.weights_note = offline_note(overrides)
        return built
    if origin != "defaults" and (refused := misfit(cls, model)) is not None:
        return refused  # a stand-in that does not fit what ``forward`` does with it
    arguments = Arguments(
        origin=origin,
        args=[value_source(value) for value in call.args],
        kwargs={name: value_source(value) for name, value in call.kwargs.items()},
    )
    return Built(model, instantiated_on, weights or skipped, arguments,
                 module_config.concrete_args, meta_branch=meta_branch)


def other_instances(context: JobContext, cls: type, first: Built) -> Iterator[Built]:
    """The instances to trace, in order of trust, when ``first`` does not fit the class
    (FX105: an error that involves no traced value): after the class's defaults, its
    module's builder function and its literal call site; after the defaults or a guess, the
    table's guesses (``fxcore.worker.building.arguments``), each also with the table's values for
    the
    parameters whose default builds nothing (``n_blocks=0``). Each is built only when asked
    for; one from the same arguments as ``first`` is left out."""
    module_config = context.module_config(cls.__name__)
    origin = first.arguments.origin
    if origin == "defaults":
        yield from _instances_after_defaults(context, cls, module_config)
    if origin not in ("defaults", "guessed") or not context.job.config.guess_arguments:
        return
    override_sets = default_overrides(cls, module_config.kwargs, _written(context, cls))
    missing = missing_parameters(cls, module_config.args, module_config.kwargs)
    calls = [(candidate.kwargs, candidate.guessed)
             for candidate in candidate_calls(cls, missing, _written(context, cls))] \
        if missing else [({}, False)]
    # Like arguments made equal first (``in_channels == out_channels`` for ``x + conv(x)``).
    calls[1:1] = [(kwargs, True) for kwargs in consistent_sets(calls[0][0])] \
        if calls[0][1] else []
    ordered: list[tuple[dict[str, Any], bool]] = []
    for kwargs, guessed in calls:
        ordered.append((kwargs, guessed))
        ordered += [({**kwargs, **overrides}, True) for overrides in override_sets]
    tried = [first.arguments.kwargs]
    for kwargs, guessed in ordered:
        sources = {name: value_source(value)
                   for name, value in {**module_config.kwargs, **kwargs}.items()}
        if sources in tried:
            continue
        tried.append(sources)
        found = _build_with_candidate(cls, module_config, kwargs,
                                      "guessed" if guessed else "config-class")
        if isinstance(found, Built):
            yield found


def _instances_after_defaults(context: JobContext, cls: type,
                              module_config: ModuleConfig) -> Iterator[Built]:
    """The real instances to try when the class's defaults build none, or none that fits: its
    module's builder function, then its literal call site, each built only when asked for."""
    by_builder = _build_with_builder(context, cls, module_config)
    if isinstance(by_builder, Built):
        yield by_builder
    by_call_site = _build_with_call_site(context, cls, module_config)
    if isinstance(by_call_site, Built):
        yield by_call_site


def _build_with_builder(context: JobContext, cls: type,
                        module_config: ModuleConfig) -> Built | str | None:
    """The class built by the first of its module's builder functions
    (``fxcore.workspace.builders``,
    in file order) that builds one, each called with no arguments but ``pretrained=False``
    where it has that parameter; why they failed when none does; None without builders."""
    failures = []
    for builder in context.job.builders.get(cls.__name__, ()):
        name = f"{cls.__module__}:{builder.function}"
        kwargs: dict[str, Any] = {"pretrained": False} if builder.passes_pretrained else {}
        try:
            model, _, weights, meta_branch = build(cls, ModuleConfig(factory=name,
                                                                     kwargs=kwargs))
        except Exception as error:
            failures.append(f"{builder.function}(): {describe_exception(error)}")
            continue
        if type(model) is not cls:
            failures.append(f"{builder.function}() returned a {type(model).__qualname__}")
            continue
        arguments = Arguments(origin="builder", builder=name,
                              kwargs={key: value_source(value) for key, value in kwargs.items()})
        # ``build`` ran the builder on the meta device and moved what it left elsewhere there.
        return Built(model, "meta", weights, arguments, module_config.concrete_args,
                     meta_branch=meta_branch)
    return "; ".join(failures) or None
