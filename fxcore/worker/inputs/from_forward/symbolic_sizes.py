"""Example inputs whose sizes ``forward``'s own operations fix, for all its tensor arguments at
once: where the fixed-shape guesses (``first_layer``, ``related``, ``documented``, ``waveform``)
find none, ``forward`` runs on fake tensors whose every size is a fresh symbol of a shape
environment (torch's ``ShapeEnv``, the one export and dynamo use), without a value. Each
operation that needs a size to be something says so as it runs: a linear layer's input width,
a convolution's or a normalization's channels, a broadcast with a buffer or parameter, a
``cat`` or ``+`` with another argument. Torch records those as runtime assertions and
replacements (``Eq(u3, 24)``, ``Eq(u1 + u9, 56)``, ``Eq(u4, u0)``), which are solved here for
concrete sizes.

Each size has a value to go by where the code branches on it (export's draft mode does the
same with real values), first ``DEFAULT_BATCH`` for the first dimension and ``DEFAULT_SIZE``
for any other: an operation's equality those values break is solved for the sizes not yet
learned (an equal share of a sum to all but the last), and where the run fails, the last
comparison of a size with another it made (``Ne(32, u1)``, a convolution's channels checked
before it raises) is taken as the equality it needed. ``forward`` then runs again with what
was learned, until it runs through with no equality broken (at most ``MAX_ROUNDS`` runs).
The ranks, which symbols cannot stand for, are tried in turn (a ``permute``'s or the first
layer's an argument meets first; a vector first for one fed to a linear layer or named as an
embedding; then 4, 3, 2), a tuple or list argument as a tuple of as many tensors as its
indices read. Optional arguments (default ``None``), keyword-only ones too, are given tensors
with the required ones first, and left out where that fails.

The inputs found are accepted only when the model runs on them eagerly on fake tensors, as
every inferred input is. The shape environment's API is private: where the installed torch
lacks a piece of it, ``unavailable()`` says which, and this search gives nothing.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import sympy
import torch
from torch import nn

from fxcore.model.container_spec import ContainerSpec, InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_forward.container_items import container_kind
from fxcore.worker.inputs.from_forward.forward_relations import argument_uses, forward_tree
from fxcore.worker.inputs.from_forward.related import VALUE_TYPES
from fxcore.worker.inputs.from_layers.first_layer import (
    LayerInputs,
    eager_error_before,
    known_layers,
    required_arguments,
)
from fxcore.worker.meta.values_read import Place, read_note
from fxcore.worker.running.budget_clock import Budget
from fxcore.worker.running.time_limit import OutOfTime, time_limit

try:  # private to torch: feature-detected, the search degrades without it
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
except ImportError:  # pragma: no cover - on a torch without them
    ShapeEnv = None  # type: ignore[assignment,misc]

#: The most seconds the search takes, the most rank layouts it tries, the most runs per layout.
MAX_SECONDS = 10.0
MAX_LAYOUTS = 27
MAX_ROUNDS = 8
#: Ranks tried for an argument no layer tells, in order.
RANKS = (4, 3, 2)
#: Sizes no operation fixes: the batch's, and every other's.
DEFAULT_BATCH = 2
DEFAULT_SIZE = 16
#: Items of a tuple or list argument whose indices the code does not read.
DEFAULT_ITEMS = 2
#: Words of an argument's name that say it holds several tensors (an up block's skips).
SEQUENCE_WORDS = frozenset({"tuple", "list"})
#: Words of an argument's name that say it holds a vector per item (a timestep embedding).
EMBEDDING_WORDS = frozenset({"emb", "temb", "embedding", "embeddings", "timestep", "timesteps"})
#: The name of the shape environment's method that gives a size without a value a value to go
#: by: torch 2.11 renamed 2.10's ``set_unbacked_var_to_val``.
VALUE_SETTERS = ("set_real_tensor_prop_unbacked_vals", "set_unbacked_var_to_val")
#: The most arguments searched at once.
MAX_ARGUMENTS = 6

#: One size of one argument: its name, the item of a tuple (None for a tensor), the dimension.
_Key = tuple[str, int | None, int]
#: An argument's layout: its rank, and how many tensors of it a tuple holds (None: a tensor).
_Layout = tuple[int, int | None]
#: What gives ``forward`` its arguments in a symbolic run: called with a function that makes
#: one size of a key (its last item the dimension) and the device.
Made = Callable[[Callable[[Any], Any], torch.device], dict[str, Any]]


def unavailable() -> str | None:
    """Why the installed torch cannot run this search (a private piece it lacks); None when
    it can."""
    if ShapeEnv is None:
        return "torch has no ShapeEnv or FakeTensorMode to import"
    env = ShapeEnv()
    missing = [name for name in ("create_unbacked_symint", "guard_or_defer_runtime_assert")
               if not hasattr(env, name)]
    if _value_setter(env) is None:
        missing.append(" or ".join(VALUE_SETTERS))
    return f"torch's ShapeEnv lacks {', '.join(missing)}" if missing else None


def _value_setter(env: Any) -> Callable[[sympy.Symbol, int], None] | None:
    """The shape environment's method that gives a size without a value the value its
    branches go by, under whichever name the installed torch has."""
    return next((getattr(env, name) for name in VALUE_SETTERS if hasattr(env, name)), None)


def symbolic_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                    concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """Inputs for ``forward``'s tensor arguments whose sizes its operations fix, which the
    model runs on; None when none are found within the bounds, or the search cannot run."""
    required = required_arguments(cls, concrete_args)
    tree = forward_tree(cls)
    # Not in the GPU view: there its sizes were not yet compared with real GPU runs (the
    # recorded answers' attention block gets a 2-D input real torch refuses).
    if not required or tree is None or unavailable() is not None:
        return None
    optional = optional_arguments(cls, concrete_args)
    names = [*required, *optional]
    if len(names) > MAX_ARGUMENTS or _annotated_as_values(cls, required):
        return None
    kinds = {name: container_kind(cls, name, tree)
                   or ("tuple" if set(name.lower().split("_")) & SEQUENCE_WORDS else None)
             for name in names}
    if any(kind == "dict" for kind in kinds.values()):
        return None  # a dict's keys are the container search's
    deadline = Budget(min(seconds, MAX_SECONDS))
    ranks = _rank_choices(tree, model, names)
    items = {name: _items_read(tree, name) if kinds[name] else None for name in names}
    for arguments in ([*required, *optional], required) if optional else (required,):
        found = _searched(model, instantiated_on, concrete_args, deadline, arguments,
                          ranks, items)
        if found is not None:
            specs, ran = found
            said = ", ".join(f"{name} {spec}" for name, spec in specs.items())
            return LayerInputs(specs, f"sizes the operations of forward fix, solved over "
                                      f"symbolic sizes ({said}), which {cls.__name__} runs "
                                      f"on{read_note(ran)}")
        if deadline.left() <= 0:
            break
    return None


def _searched(model: nn.Module, instantiated_on: InstantiatedOn,
              concrete_args: dict[str, object], deadline: Budget, names: list[str],
              ranks: dict[str, list[int]], items: dict[str, int | None]
              ) -> tuple[dict[str, InputSpec], list[Place]] | None:
    lists = [list(enumerate(ranks[name])) for name in names]
    layouts = sorted(itertools.product(*lists), key=lambda row: sum(i for i, _ in row))
    for row in layouts[:MAX_LAYOUTS]:
        layout = {name: (rank, items[name]) for name, (_, rank) in zip(names, row, strict=True)}
        sizes = solved_sizes(model, instantiated_on, concrete_args, deadline, lambda size, device,
                             shown=layout: {name: _made(name, rank, count, size, device)
                                            for name, (rank, count) in shown.items()})
        if sizes is None:
            if deadline.left() <= 0:
                return None
            continue
        specs = _specs(layout, sizes)
        ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            return specs, ran
    return None


def solved_sizes(model: nn.Module, instantiated_on: InstantiatedOn,
                 concrete_args: dict[str, object], deadline: Budget, make: Made
                 ) -> dict[Any, int] | None:
    """Every size of the tensors ``make`` gives ``forward`` (``make(size, device)``, each
    size ``size(key)``), as the operations fix them and defaults the rest (a key's last item
    its dimension); None where ``forward`` fails on them for want of something else than a
    size."""
    hints: dict[_Key, int] = {}
    learned: set[_Key] = set()
    for _ in range(MAX_ROUNDS):
        left = deadline.left()
        if left <= 0:
            return None
        symbols, asserts, failed = _symbolic_run(model, instantiated_on, concrete_args,
                                                 make, hints, left)
        if not symbols:
            return None
        current = {symbol: _hint(key, hints) for key, symbol in symbols.items()}
        # An equality the hints break was asserted by an operation (``torch._check``), not
        # taken from a hint; where the run failed on a size, the last comparison with a
        # size it made (``Ne(32, u1)``: a convolution's channels) names the size it needed.
        wrong = [a for a in asserts if isinstance(a, sympy.Eq) and a.subs(current) == sympy.false]
        if not failed and not wrong:
            return {key: current[symbol] for key, symbol in symbols.items()}
        if not wrong:
            wrong = [sympy.Eq(a.lhs, a.rhs) for a in asserts if isinstance(a, sympy.Ne)][-1:]
        free = {symbol for key, symbol in symbols.items() if key not in learned}
        found: dict[sympy.Symbol, int] = {}
        for equation in wrong:
            found.update(_learned(equation, {**current, **found}, free - found.keys()))
        if not found:
            return None  # nothing to learn: a rank or the model itself the run fails on
        by_symbol = {symbol: key for key, symbol in symbols.items()}
        hints.update({by_symbol[symbol]: value for symbol, value in found.items()})
        learned.update(by_symbol[symbol] for symbol in found)
    return None


def _hint(key: _Key, hints: dict[_Key, int]) -> int:
    return hints.get(key) or (DEFAULT_BATCH if key[-1] == 0 else DEFAULT_SIZE)


def _symbolic_run(model: nn.Module, instantiated_on: InstantiatedOn,
                  concrete_args: dict[str, object], make: Made,
                  hints: dict[_Key, int], seconds: float
                  ) -> tuple[dict[_Key, sympy.Symbol], list[sympy.Basic], bool]:
    """Run ``forward`` once on tensors whose every size is a fresh symbol without a value:
    the symbol of each size (none where the run ran out of time), the assertions on them in
    the order made, and whether the run failed. A branch on a size takes the
    way its hint (else its default) says, as export's draft mode does with real values, so
    that a size the code tests does not stop the run before the operations fix the others."""
    env = ShapeEnv()
    symbols: dict[_Key, sympy.Symbol] = {}
    asserts: list[sympy.Basic] = []
    weights = [*model.parameters(), *model.buffers()]
    on_meta = weights[0].is_meta if weights else instantiated_on != "cpu"
    device = torch.device("meta" if on_meta else "cpu")
    asserting = env.guard_or_defer_runtime_assert
    give_value = _value_setter(env)

    def recorded(expr: sympy.Basic, *args: Any, **kwargs: Any) -> Any:
        asserts.append(expr)
        return asserting(expr, *args, **kwargs)

    env.guard_or_defer_runtime_assert = recorded  # type: ignore[method-assign]

    def size(key: _Key) -> Any:
        made = env.create_unbacked_symint()
        symbols[key] = made.node.expr
        give_value(made.node.expr, _hint(key, hints))
        return made

    failed = False
    try:
        with _quiet(), FakeTensorMode(shape_env=env, allow_non_fake_inputs=True), \
                torch.no_grad(), time_limit(seconds):
            arguments = make(size, device)
            model(**arguments, **copy.deepcopy(concrete_args))
    except OutOfTime:
        return {}, [], True
    except Exception:  # a size, a rank or the model itself the run fails on
        failed = True
    return symbols, asserts, failed


def _learned(equation: sympy.Eq, current: dict[sympy.Symbol, int], free: set[sympy.Symbol]
             ) -> dict[sympy.Symbol, int]:
    """Sizes for the ``free`` symbols of ``equation`` that make it hold, the others at
    ``current``: an equal share of a sum of sizes (two arguments joined into one layer's
    channels), the last one solved; none where no positive size does."""
    unknown = sorted(equation.free_symbols & free, key=str)
    if not unknown:
        return {}
    total = equation.rhs if equation.rhs.is_number else equation.lhs
    share = int(total) // len(unknown) if total.is_number and isinstance(
        equation.lhs if total is equation.rhs else equation.rhs, sympy.Add) else None
    values = {symbol: share if share and share >= 1 else current[symbol]
              for symbol in unknown[:-1]}
    last = unknown[-1]
    rest = {s: v for s, v in {**current, **values}.items() if s != last}
    value = _root(equation.xreplace({s: sympy.Integer(v) for s, v in rest.items()}), last)
    if value is None:
        return {}
    return {**values, last: value}


def _root(equation: sympy.Basic, symbol: sympy.Symbol) -> int | None:
    """The least positive integer size that makes ``equation`` (in ``symbol`` alone) hold."""
    try:
        roots = [r for r in sympy.solve(equation, symbol) if r.is_integer and r >= 1]
    except Exception:  # torch's own sympy functions (FloorDiv, Mod): tried by value below
        roots = []
    if roots:
        return int(min(roots))
    numbers = {abs(int(n)) for n in equation.atoms(sympy.Integer) if n != 0}
    for candidate in sorted({n * k for n in numbers for k in range(1, 9)} | numbers):
        try:
            if equation.xreplace({symbol: sympy.Integer(candidate)}) == sympy.true:
                return candidate
        except Exception:  # an expression that does not evaluate at this size
            continue
    return None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Fake tensors log every kernel that refuses a size before raising; the search expects
    refusals and reads none of those logs."""
    loggers = [logging.getLogger(name) for name in ("torch._subclasses.fake_tensor",
                                                    "torch.fx.experimental.symbolic_shapes")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _made(name: str, rank: int, count: int | None, size: Callable[[_Key], Any],
          device: torch.device) -> Any:
    if count is None:
        return torch.empty([size((name, None, dim)) for dim in range(rank)], device=device)
    return tuple(torch.empty([size((name, item, dim)) for dim in range(rank)], device=device)
                 for item in range(count))


def _specs(layout: dict[str, _Layout], sizes: dict[_Key, int]) -> dict[str, InputSpec]:
    specs: dict[str, InputSpec] = {}
    for name, (rank, count) in layout.items():
        if count is None:
            specs[name] = TensorSpec("float32", tuple(sizes[(name, None, d)]
                                                      for d in range(rank)))
            continue
        specs[name] = ContainerSpec("tuple", tuple(
            (str(item), TensorSpec("float32", tuple(sizes[(name, item, d)]
                                                    for d in range(rank))))
            for item in range(count)))
    return specs


def _rank_choices(tree: ast.AST, model: nn.Module, names: list[str]) -> dict[str, list[int]]:
    """Each argument's ranks in the order tried: a ``permute``'s, that of the first layer it
    is passed to or joined into, then ``RANKS``."""
    uses = argument_uses(tree, model, names)
    told: dict[str, list[int]] = {}
    linear: dict[str, bool] = {}
    for name in names:
        told[name] = [uses[name].rank] if uses[name].rank else []
        takers = [*uses[name].takers, *(layer for layer, _ in uses[name].joined_into)]
        layers = next((found for found in map(known_layers, takers) if found), [])
        if layers:
            told[name].append(len(layers[0][2].dims))
            linear[name] = isinstance(layers[0][1], nn.Linear)
    # A linear layer takes any rank: a vector per item (an embedding) first. An argument no
    # layer tells takes the ranks the other arguments' layers other than linear ones tell.
    others = [rank for name in names if not linear.get(name) for rank in told[name]]
    return {name: list(dict.fromkeys([*([2] if linear.get(name) or _embedding(name) else []),
                                       *(told[name] or others), *RANKS]))
            for name in names}


def _embedding(name: str) -> bool:
    return bool(set(name.lower().split("_")) & EMBEDDING_WORDS)


def _items_read(tree: ast.AST, name: str) -> int:
    """How many tensors a tuple argument needs for the indices the code reads (``[-2]``: 2)."""
    needed = DEFAULT_ITEMS
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == name:
            index = node.slice
            if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) \
                    and isinstance(index.operand, ast.Constant) \
                    and isinstance(index.operand.value, int):
                needed = max(needed, index.operand.value)
            elif isinstance(index, ast.Constant) and isinstance(index.value, int):
                needed = max(needed, index.value + 1)
    return needed


def optional_arguments(cls: type, concrete_args: dict[str, object]) -> list[str]:
    """``forward``'s arguments whose default is None (keyword-only ones too), not fixed by
    ``concrete_args`` and not annotated as numbers, flags or strings."""
    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    optional = [p.name for p in parameters
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is None
                and p.name not in concrete_args]
    return [name for name in optional if not _annotated_as_values(cls, [name])]


def _annotated_as_values(cls: type, names: list[str]) -> bool:
    try:
        hints = inspect.get_annotations(cls.forward, eval_str=True)
    except Exception:  # an annotation that does not evaluate says nothing
        return False
    return any(hint in VALUE_TYPES or any(arg in VALUE_TYPES for arg in getattr(
        hint, "__args__", ())) for hint in (hints.get(name) for name in names))
