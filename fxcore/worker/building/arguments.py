"""Constructor arguments for classes nobody configured: from configuration classes, else
synthesized from parameter names, annotations and defaults.

Runs in the worker (it inspects the class), builds nothing itself: ``candidate_calls`` lists
keyword-argument sets to try in order, each a plausible small model, the first one the
constructor accepts kept. Values are small: the model is built on meta and only traced, so
their size only has to be consistent (``dim`` divisible by ``heads``).

The name table (documented in docs/inputs.md, "Constructor arguments"):

======================================================  ========================
parameter name                                          value
======================================================  ========================
``in_channels``, ``in_chans``, ``in_ch``, ...           3
``spatial_dims``                                        2
``out_channels``, ``channels``, ``*_channels``, ...     16
``dim``, ``hidden_size``, ``embed_dim``, ``*_dim``,     64
``*_features``, ``d_model``, ``n_embd``, ``width``
``depth``, ``num_layers``, ``n_layer``, ``*_blocks``    2
``heads``, ``num_heads``, ``n_head``, ``nhead``         4
``dim_head``, ``head_dim``                              16
``num_classes``, ``n_classes``, ``num_labels``          10
``image_size``, ``img_size``, ``input_size``            32
``patch_size``, ``*_patch_size``                        8
``frames``, ``num_frames``, ``clip_len``                16
``kernel_size``, ``*_kernel_size``                     3
``stride``, ``dilation``, ``groups``                    1
``padding``                                             1
``vocab_size``, ``num_embeddings``, ``num_tokens``      100
``max_len``, ``seq_len``, ``sequence_length``, ...     16
``dropout``, ``*_drop``, ``*_rate``, ``p``              0.0
``eps``                                                 1e-5
``*ratio``, ``expansion``                               4
``fn``, ``module``, ``block``, ``net``, ``layer``, ...  ``nn.Identity()``
plural sizes (``depths``, ``dims``, ``dim_mults``, ...)  a tuple of two
other ``num_*``/``n_*``                                 2
annotated ``int``/``float``/``bool``/``str``            2 / 1.0 / False / (none)
======================================================  ========================
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import re
import sys
from collections import ChainMap
from collections.abc import Mapping
from typing import Any

import torch

from fxcore.model.job_spec import CallSite
from fxcore.worker.building.annotation_values import (
    is_module_annotation,
    kind_fitted,
    made_source,
    union_members,
)
from fxcore.worker.building.code_values import MAX_VALUES, annotated_values, code_values
from fxcore.worker.building.forward_uses import of_forward_use, unfit_default
from fxcore.worker.building.module_uses import module_list_values
from fxcore.worker.building.use_kinds import of_use

#: How many argument sets are tried before giving up on a class.
MAX_CANDIDATES = 4

_Rule = tuple[str, Any]

#: (regular expression over the parameter name, value); the first match wins.
NAME_RULES: list[_Rule] = [
    (r"(in|input)_?(channels?|chans|chs|ch|planes)|n_?channels|num_channels|image_channels", 3),
    (r"spatial_dims?|n_?dims|ndim|num_spatial_dims", 2),
    (r"dim_head|head_dim|head_size|d_head|dim_per_head", 16),
    (r"(num_|n_)?(heads|head)|nhead|num_attention_heads|attention_heads", 4),
    (r"(num_|n_)?classes|num_labels|n_labels|num_outputs", 10),
    (r"(image|img|input)_?(size|res|resolution)|resolution", 32),
    (r"(\w+_)?patch_?size|patch", 8),
    (r"(num_|n_)?frames|clip_?len(gth)?", 16),
    # An FFT's or window's length in samples: an audio transform's, 2 would be no spectrum.
    (r"n_?fft|fft_?size|win_?length|window_?(length|size)|filter_length|n_window", 512),
    (r"(\w+_)?kernel_?size|kernel|ksize|k", 3),
    (r"stride|dilation|groups|num_groups_conv", 1),
    (r"padding|pad", 1),
    (r"vocab_?size|num_embeddings|num_tokens|n_vocab|n_tokens|vocab", 100),
    (r"max_?(len|length|seq_len|position_embeddings)|seq_?len|block_size|context_length"
     r"|n_ctx|n_positions|seq_length|sequence_?len(gth)?", 16),
    (r"depth|(num_|n_)?layers|n_layer|num_blocks|n_blocks", 2),
    (r"num_groups|groups_norm|n_groups", 4),
    (r"(.*_)?dropout|(.*_)?drop(_rate|_prob)?|(.*_)?rate|p|prob", 0.0),
    (r"eps|epsilon|layer_norm_eps|norm_eps", 1e-5),
    (r"(.*_)?ratio|expansion|expand|mult|multiplier", 4),
    (r"(num_|n_)?(out|output)_?(channels?|chans|chs|ch|planes)|channels|chans|planes|filters"
     r"|(.*_)?channels?|(.*_)?chs|(num_)?feat(ure)?s?_?maps?|base_channels|width", 16),
    (r"dim|d_model|n_embd|(.*_)?dim|(.*_)?size|hidden|(.*_)?features|(num_|n_)?features"
     r"|emb(ed)?(ding)?s?|d_ff|ffn_dim|intermediate_size|units|neurons", 64),
]

#: Plural names that usually take one size per stage.
PLURAL_RULES: list[_Rule] = [
    (r"depths|layers_per_stage|num_blocks_per_stage|blocks_per_stage|stage_depths", (1, 1)),
    (r"(num_)?heads_per_stage|heads_list|num_heads_list", (2, 4)),
    (r"dim_mults|channel_mults|ch_mult|multipliers", (1, 2)),
    (r"strides", (1, 2)),
    (r"kernel_sizes", (3, 3)),
    (r"dims|hidden_dims|embed_dims|channels_list|(.*_)?channels_list|widths|features_list"
     r"|block_out_channels|out_channels_list|filters_list|hidden_sizes|layer_dims", (16, 32)),
]

#: Names that usually take a module to wrap (``PreNorm(dim, fn)``): given ``nn.Identity()``.
WRAPPED_MODULE_NAMES = re.compile(
    r"fn|func|function|module|sublayer|layer|block|net|model|body|inner|backbone|encoder"
    r"|decoder|head"
)

#: Names of a loss module's parameter: ``nn.MSELoss()`` (a prediction and target of one shape).
LOSS_NAMES = re.compile(r"(\w+_)?(loss|criterion)(_fn|_func|_function|_module)?")

_NUMBER_PREFIX = re.compile(r"(num|n)_\w+")


@dataclasses.dataclass
class CandidateCall:
    """Keyword arguments to try, and whether any of them came from guessing (as opposed to
    a configuration class built with its own defaults)."""

    kwargs: dict[str, Any]
    guessed: bool


def annotation_of(parameter: inspect.Parameter, namespace: dict[str, Any]) -> Any:
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        try:
            return eval(annotation, namespace)  # the class's own module, inside the worker
        except Exception:
            return annotation
    return annotation


def config_instance(annotation: Any, name: str, namespace: dict[str, Any]) -> Any:
    """An instance of a configuration class the parameter names or is annotated with,
    built from its own defaults; ``None`` when there is none."""
    # ``Optional[LayerFn]``: the class; ``nn.Module()`` is no model, ``Tensor()`` no data.
    candidates: list[Any] = [member for member in union_members(annotation)
                             if isinstance(member, type)
                             and member.__module__ not in {"builtins", "typing"}
                             and not is_module_annotation(member)
                             and not issubclass(member, torch.Tensor)]
    if not candidates and re.fullmatch(r"(config|cfg|conf|args|hparams|params|opt|options"
                                       r"|settings)", name):
        candidates += [value for key, value in namespace.items()
                       if isinstance(value, type) and re.search(r"(Config|Cfg|Args|Params)$",
                                                               key)]
    for candidate in candidates:
        try:
            signature = inspect.signature(candidate)
        except (TypeError, ValueError):
            continue
        if any(p.default is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature.parameters.values()):
            continue
        try:
            return candidate()
        except Exception:  # the workspace's config class may raise anything: try the next
            continue
    return None


def _by_annotation(annotation: Any) -> Any:
    if annotation is bool:
        return False
    if annotation is int:
        return 2
    if annotation is float:
        return 1.0
    origin = getattr(annotation, "__origin__", None)
    if origin in (tuple, list):
        return (16, 32)
    return inspect.Parameter.empty


def guess_value(name: str, annotation: Any) -> Any:
    """The table's value for a parameter, or ``inspect.Parameter.empty``."""
    lowered = name.lower()
    for pattern, value in PLURAL_RULES:
        if re.fullmatch(pattern, lowered):
            return value
    if annotation is bool or re.fullmatch(r"(use|with|has|is|enable|add)_\w+|bias|affine"
                                          r"|causal|residual|pre_norm|flash", lowered):
        return False
    if annotation is str:
        return inspect.Parameter.empty
    if LOSS_NAMES.fullmatch(lowered):
        return torch.nn.MSELoss()
    if WRAPPED_MODULE_NAMES.fullmatch(lowered):
        return torch.nn.Identity()
    for pattern, value in NAME_RULES:
        if re.fullmatch(pattern, lowered):
            return float(value) if annotation is float else value
    if _NUMBER_PREFIX.fullmatch(lowered):
        return 2
    return _by_annotation(annotation)


def _variants(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's values, then a few other consistent sets for constructors that reject
    the first (a ``dim`` that must divide by 8, odd kernels, ...)."""
    def scaled(factor: int) -> dict[str, Any]:
        return {key: value * factor if isinstance(value, int) and not isinstance(value, bool)
                and value >= 16 else value for key, value in values.items()}

    def with_unknown(replacement: Any) -> dict[str, Any]:
        return {key: replacement if value is None else value for key, value in values.items()}

    variants = [values, scaled(2), with_unknown(1), scaled(4)]
    unique: list[dict[str, Any]] = []
    for variant in variants:
        if variant not in unique:
            unique.append(variant)
    return unique[:MAX_CANDIDATES]


def candidate_calls(cls: type, missing: list[str],
                    written: Mapping[str, tuple[str, ...]] | None = None) -> list[CandidateCall]:
    """Keyword-argument sets for the ``missing`` constructor parameters of ``cls``, best
    first; ``written``: parameter -> the literal values partly literal calls in the workspace
    give it (``TraceJob.keyword_values``), as source."""
    namespace = dict(vars(sys.modules.get(cls.__module__, sys))) if cls.__module__ else {}
    try:
        parameters = dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        parameters = {}
    values: dict[str, Any] = {}
    others: dict[str, list[Any]] = {}
    annotations: dict[str, Any] = {}
    guessed = False
    for name in missing:
        parameter = parameters.get(name)
        annotation = annotation_of(parameter, namespace) if parameter is not None else None
        config = config_instance(annotation, name, namespace)
        if config is not None:
            values[name] = config
            continue
        guessed = True
        found = named_values(cls, name, annotation, (written or {}).get(name, ()))
        values[name], *others[name] = found or [None]
        annotations[name] = annotation
    # Of the kind the annotation, __init__'s use or a use of modules (``module_uses``) says.
    for name, fitted in {**module_list_values(cls, guesses := {n: values[n] for n in annotations}),
                         **kind_fitted(cls, guesses, annotations)}.items():
        values[name], others[name] = fitted[0], [*fitted[1:], *others[name]][:MAX_VALUES]
    for name in annotations:  # None where nothing fits what ``forward`` does with it
        values[name], *others[name] = of_forward_use(cls, name, [values[name], *others[name]]) \
            or [None]
    variants = _variants(values)
    # The code's other values, each in place of the first, where the constructor rejects it.
    variants += [{**values, name: value} for name, rest in others.items() for value in rest]
    return [CandidateCall(kwargs, guessed) for kwargs in variants]


def named_values(cls: type, name: str, annotation: Any,
                 written: tuple[str, ...] = ()) -> list[Any]:
    """The values to try for a parameter, best first: those the workspace's partly literal
    calls of ``cls`` give it (``written``, as source); then the values its annotation spells
    (a ``Literal``, an enum), the table's value, else those ``cls``'s code or docstrings name
    (``fxcore.worker.building.code_values``); empty when there is none."""
    found = []
    for source in written[:MAX_VALUES]:
        try:
            found.append(evaluate_argument(source, class_namespace(cls)))
        except Exception:  # a nested call the class's module cannot build: not a value
            continue
    spelled = annotated_values(annotation)
    value = guess_value(name, annotation)
    if spelled or value is inspect.Parameter.empty:
        guessed = code_values(cls, name, annotation)
    else:
        guessed = [value]
    return [*found, *of_use(cls, name, guessed)][:MAX_VALUES]


def _builds_nothing(value: Any) -> bool:
    """``None``, ``0``, an empty container: a default that leaves a part out (``act=None``)."""
    if value is None:
        return True
    if type(value) is int:
        return value == 0
    return isinstance(value, (tuple, list, dict)) and not value


def default_overrides(cls: type, configured: dict[str, Any],
                      written: Mapping[str, tuple[str, ...]] | None = None
                      ) -> list[dict[str, Any]]:
    """Values for the constructor parameters whose default builds nothing, where the table or
    the class's code has one (``named_values``): an instance built with those defaults may not
    fit the class (FX105), and these are the next guesses, the first values, then each other
    value the code names in place of its first (a ``norm: str | tuple | None = None`` whose
    registry's first key needs more arguments); also for a default that does not fit what
    ``forward`` does with it (``attn=1`` called: ``forward_uses``); ``written`` as for
    ``candidate_calls``. Configured parameters keep their values; empty for none."""
    namespace = dict(vars(sys.modules.get(cls.__module__, sys))) if cls.__module__ else {}
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return []
    overrides: dict[str, Any] = {}
    others: dict[str, list[Any]] = {}
    for name, parameter in parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) \
                or parameter.default is inspect.Parameter.empty or name in configured \
                or not (_builds_nothing(default := parameter.default)
                        or unfit_default(cls, name, default)):
            continue
        found = [value for value in named_values(cls, name, annotation_of(parameter, namespace),
                                                 (written or {}).get(name, ()))
                 if not _builds_nothing(value)
                 and (value != default if _builds_nothing(default) else value is not default)]
        if found:
            overrides[name], others[name] = found[0], found[1:]
    if not overrides:
        return []
    return [overrides, *({**overrides, name: value}
                         for name, rest in others.items() for value in rest)]


def missing_from_type_error(error: BaseException) -> list[str]:
    """Parameter names a ``TypeError`` says are missing (``__init__() missing 1 required
    positional argument: 'dim'``), as raised by a base class a constructor forwarded
    ``**kwargs`` to; empty for any other error."""
    if not isinstance(error, TypeError):
        return []
    message = str(error)
    if not re.search(r"missing \d+ required (positional|keyword-only) arguments?", message):
        return []
    return re.findall(r"'(\w+)'", message.split(":", 1)[-1])


def evaluate_argument(source: str, namespace: Mapping[str, Any]) -> Any:
    """A call site's argument: a literal, or a call of a class the module's namespace names
    whose arguments are themselves such (``GPTConfig(n_layer=2)``)."""
    node = ast.parse(source, mode="eval").body
    if not isinstance(node, ast.Call):
        return ast.literal_eval(node)
    function = node.func
    name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
    target = namespace.get(name)
    if not isinstance(target, type):
        raise NameError(f"{name} is not a class of this module")
    return target(*(evaluate_argument(ast.unparse(a), namespace) for a in node.args),
                  **{k.arg: evaluate_argument(ast.unparse(k.value), namespace)
                     for k in node.keywords if k.arg})


def class_namespace(cls: type) -> Mapping[str, Any]:
    """The names a call site of ``cls`` is evaluated with: the globals of the class's module,
    then those of its packages already imported with it (``pkg.models``, then ``pkg``). A
    README imports from the package (``from pkg import Net, Wrapper``) and nests one call in
    another (``Wrapper(Net(dim=8))``) although ``Wrapper``'s own module need not import
    ``Net``; nothing new is imported."""
    parts = cls.__module__.split(".")
    modules = [sys.modules.get(".".join(parts[:length])) for length in range(len(parts), 0, -1)]
    return ChainMap(*(vars(module) for module in modules if module is not None))


def call_site_values(site: CallSite,
                     namespace: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword values of a call site, evaluated in ``namespace``."""
    return ([evaluate_argument(source, namespace) for source in site.args],
            {name: evaluate_argument(source, namespace) for name, source in site.kwargs})


def value_source(value: Any) -> str:
    """Python source that rebuilds ``value`` in the class's module namespace."""
    if (made := made_source(value)) is not None:
        return made
    if isinstance(value, enum.Enum):
        cls = type(value)
        return f"__import__({cls.__module__!r}, fromlist=['_']).{cls.__qualname__}.{value.name}"
    if isinstance(value, type) or inspect.isfunction(value):
        return f"__import__({value.__module__!r}, fromlist=['_']).{value.__qualname__}"
    if type(value).__module__.startswith("torch.nn") and repr(value).endswith("()"):
        return f"__import__('torch').nn.{type(value).__name__}()"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Spelled with its module: the class may not be a global of the module using it.
        cls = type(value)
        fields = ", ".join(f"{item.name}={value_source(getattr(value, item.name))}"
                           for item in dataclasses.fields(value) if item.init)
        return f"__import__({cls.__module__!r}, fromlist=['_']).{cls.__qualname__}({fields})"
    if isinstance(value, (tuple, list)):
        items = ", ".join(value_source(item) for item in value)
        return f"({items},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({items})" if isinstance(value, tuple) else f"[{items}]")
    return repr(value)

