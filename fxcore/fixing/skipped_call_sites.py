"""Where a graph break at a call dynamo does not trace can be fixed, from one ``ast`` parse:
the shapes of code ``skipped_call_fixes`` rewrites, and which escape hatches the installed torch
offers.

- an element-wise function of a C extension (``scipy.special``'s ufuncs, numpy functions
  ``torch._numpy`` lacks) applied to one tensor through numpy,
  ``torch.from_numpy(scipy.special.expit(x.numpy()))``: the output has the input's shape, so it
  becomes a ``torch.library.custom_op`` whose fake implementation is ``torch.empty_like``;
- a break inside a module-level helper function: the helper is the smallest region a
  ``torch._dynamo.nonstrict_trace`` (or, last, ``torch.compiler.disable``) can cover;
- ``copy.deepcopy(x)`` of a tensor: ``x.detach().clone()``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
from dataclasses import dataclass

from fxcore.workspace.parsing import parse_module
from fxcore.workspace.paths import split_lines

#: numpy functions dynamo does not trace (GB0294) that are element-wise in their first
#: argument, with the dtype of what they return for a float32 input (None: the input's).
NUMPY_ELEMENTWISE = {"interp": "float64", "sinc": None, "i0": "float64", "nan_to_num": None,
                     "heaviside": None, "spacing": None}
#: ``torch`` functions that make a tensor of a numpy array, keeping its dtype and shape.
_FROM_NUMPY = frozenset({"from_numpy", "as_tensor", "tensor"})
#: Methods between the tensor and ``.numpy()`` that change neither values nor shape.
_PASSING = frozenset({"detach", "cpu", "contiguous"})
#: The op's parameter, the tensor.
_PARAMETER = "tensor"


@dataclass(frozen=True)
class OpSite:
    """``torch.from_numpy(F(x.numpy(), ...))`` with F element-wise: where it starts (1-based
    line, character column), the op's body (the expression with the tensor as ``tensor``),
    the tensor's source, F's dotted name as written, and the dtype the fake implementation
    gives (None: the tensor's)."""

    line: int
    column: int
    body: str
    tensor: str
    function: str
    dtype: str | None

    @property
    def op_name(self) -> str:
        """A Python name of the op, distinct for distinct bodies in one file."""
        digest = hashlib.sha1(self.body.encode()).hexdigest()
        return f"_{self.function.rsplit('.', 1)[-1]}_op_{digest[:6]}"


@dataclass(frozen=True)
class DeepcopySite:
    line: int
    column: int
    #: The copied expression's source.
    copied: str


@dataclass(frozen=True)
class CallSites:
    ops: tuple[OpSite, ...]
    deepcopies: tuple[DeepcopySite, ...]
    #: (name, first line, last line) of each module-level function.
    helpers: tuple[tuple[str, int, int], ...]


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted module or object a module-level import binds to it."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    found[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _resolved(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The full dotted name a Name/Attribute chain means given the imports, or None."""
    name = _dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head not in imports:
        return None
    return f"{imports[head]}.{rest}" if rest else imports[head]


def _tensor_of(node: ast.expr) -> ast.expr | None:
    """``x`` of ``x.numpy()``, ``x.detach().cpu().numpy()``."""
    if not (isinstance(node, ast.Call) and not node.args and not node.keywords
            and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy"):
        return None
    inner = node.func.value
    while isinstance(inner, ast.Call) and not inner.args and not inner.keywords \
            and isinstance(inner.func, ast.Attribute) and inner.func.attr in _PASSING:
        inner = inner.func.value
    return inner


def _constant(node: ast.expr) -> bool:
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_constant(item) for item in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _constant(node.operand)
    return isinstance(node, ast.Constant)


def _elementwise_dtype(function: str) -> tuple[bool, str | None]:
    """(element-wise, dtype of its float32 result: None for float32)."""
    if function.startswith("scipy.special."):
        return True, None  # ufuncs: float32 in, float32 out
    module, _, name = function.rpartition(".")
    if module == "numpy" and name in NUMPY_ELEMENTWISE:
        return True, NUMPY_ELEMENTWISE[name]
    return False, None


def _astype(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``float32`` of ``.astype(np.float32)`` / ``.astype("float32")``, else None."""
    if len(node.args) != 1 or node.keywords:
        return None
    argument = node.args[0]
    if isinstance(argument, ast.Constant) and argument.value in ("float32", "float64"):
        return str(argument.value)
    name = _resolved(argument, imports)
    return name.rsplit(".", 1)[-1] if name in ("numpy.float32", "numpy.float64") else None


def _op_site(node: ast.Call, imports: dict[str, str]
             ) -> tuple[ast.expr, str, str | None] | None:
    """(tensor, function as written, dtype) when ``node`` is a from-numpy of an element-wise
    call on one tensor."""
    module, _, name = (_resolved(node.func, imports) or "").rpartition(".")
    if module != "torch" or name not in _FROM_NUMPY or len(node.args) != 1 or node.keywords:
        return None
    inner, cast = node.args[0], None
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
            and inner.func.attr == "astype":
        cast = _astype(inner, imports)
        if cast is None:
            return None
        inner = inner.func.value
    if not isinstance(inner, ast.Call) or inner.keywords or not inner.args:
        return None
    function = _resolved(inner.func, imports)
    tensor = _tensor_of(inner.args[0])
    if function is None or tensor is None or not all(_constant(a) for a in inner.args[1:]):
        return None
    elementwise, dtype = _elementwise_dtype(function)
    written = _dotted(inner.func)
    if not elementwise or written is None:
        return None
    return tensor, written, cast if cast is not None else dtype


def call_sites(source: str) -> CallSites | None:
    """The sites of ``source`` (None when it does not parse)."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    lines = split_lines(source)
    imports = _imports(tree)

    def column(line: int, offset: int) -> int:
        return len(lines[line - 1].encode()[:offset].decode(errors="replace")) + 1

    ops, copies = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        site = _op_site(node, imports)
        text = ast.get_source_segment(source, node) or ""
        if site is not None and "\n" not in text:
            tensor, function, dtype = site
            # Both on one line: byte offsets into it.
            line = lines[node.lineno - 1].encode()
            before = line[node.col_offset:tensor.col_offset].decode()
            after = line[tensor.end_col_offset or 0:node.end_col_offset].decode()
            ops.append(OpSite(node.lineno, column(node.lineno, node.col_offset),
                              f"{before}{_PARAMETER}{after}",
                              ast.get_source_segment(source, tensor) or "", function, dtype))
        elif _resolved(node.func, imports) == "copy.deepcopy" and len(node.args) == 1 \
                and not node.keywords and "\n" not in text and not _is_attribute_of_self(
                    node.args[0]):
            copied = ast.get_source_segment(source, node.args[0]) or ""
            copies.append(DeepcopySite(node.lineno, column(node.lineno, node.col_offset),
                                       copied))
    helpers = tuple((node.name, node.lineno, node.end_lineno or node.lineno)
                    for node in tree.body if isinstance(node, ast.FunctionDef))
    return CallSites(tuple(ops), tuple(copies), helpers)


def _is_attribute_of_self(node: ast.expr) -> bool:
    """``self.encoder``: most likely a submodule, whose copy is a model of its own."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


@functools.cache
def dynamo_decorators() -> frozenset[str]:
    """Which of ``nonstrict_trace`` and ``leaf_function`` ``torch._dynamo`` offers in the
    torch the workers import: the one this interpreter finds (workers run on
    ``sys.executable``), read from its source so that the host never imports torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return frozenset()
    path = os.path.join(os.path.dirname(spec.origin), "_dynamo", "decorators.py")
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return frozenset()
    return frozenset(name for name in ("nonstrict_trace", "leaf_function")
                     if f"def {name}(" in text)
