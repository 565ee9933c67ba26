"""``[tool.fx-lsp]`` edits behind the quick fixes that configure instead of editing code
(leaf modules, autowrap, concrete and dynamic arguments): ``pyproject.toml`` text in, text
out, with tomlkit so that formatting and comments survive; idempotent, as every fix is."""

from __future__ import annotations

from typing import Any

import tomlkit


def _fx_table(document: tomlkit.TOMLDocument) -> Any:
    """The ``[tool.fx-lsp]`` table, created (without an empty ``[tool]`` header) when missing."""
    if "tool" not in document:
        document["tool"] = tomlkit.table(is_super_table=True)
    tool = document["tool"]
    if "fx-lsp" not in tool:
        tool["fx-lsp"] = tomlkit.table()
    return tool["fx-lsp"]


def _append_new(table: Any, key: str, name: str) -> bool:
    """Append ``name`` to the array ``table[key]``, made if missing; False (and the caller
    keeps its text) when ``name`` is already there."""
    if key not in table:
        table[key] = tomlkit.array()
    names = table[key]
    if name in names:
        return False
    names.append(name)
    return True


def _add_to_list(pyproject: str, key: str, name: str) -> str:
    document = tomlkit.parse(pyproject)
    return tomlkit.dumps(document) if _append_new(_fx_table(document), key, name) else pyproject


def add_leaf_module(pyproject: str, name: str) -> str:
    """Add ``name`` to ``leaf-modules`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "leaf-modules", name)


def add_autowrap_function(pyproject: str, name: str) -> str:
    """Add ``name`` (``pkg.mod:function``) to ``autowrap-functions`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "autowrap-functions", name)


def add_autowrap_module(pyproject: str, name: str) -> str:
    """Add the module ``name`` (``einops``) to ``autowrap-modules`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "autowrap-modules", name)


def _module_table(document: Any, qualified_name: str) -> Any:
    """``[tool.fx-lsp.modules."<class>"]``, made if missing."""
    table = _fx_table(document)
    if "modules" not in table:
        table["modules"] = tomlkit.table(is_super_table=True)
    modules = table["modules"]
    if qualified_name not in modules:
        modules[qualified_name] = tomlkit.table()
    return modules[qualified_name]


def add_concrete_none(pyproject: str, qualified_name: str, argument: str) -> str:
    """Add ``argument`` to ``concrete-none`` under ``[tool.fx-lsp.modules."<class>"]``: traced
    as None (TOML has no null for ``concrete-args``)."""
    document = tomlkit.parse(pyproject)
    added = _append_new(_module_table(document, qualified_name), "concrete-none", argument)
    return tomlkit.dumps(document) if added else pyproject


def _dim_name(value: Any) -> Any:
    """The name of one ``dynamic`` dimension: ``"batch"`` or ``{name = "batch", ...}``."""
    return value.get("name") if isinstance(value, dict) else value


def apply_dynamic_suggestion(pyproject: str, qualified_name: str, class_name: str, name: str,
                             bounds: tuple[int | None, int | None] | None) -> str:
    """torch.export's suggested fix of the dynamic dimension ``name`` in ``dynamic`` under
    ``[tool.fx-lsp.modules."<class>"]`` (or the bare class name's table, as the
    configuration reads it): with ``bounds`` (min, max) the bounds torch gives replace the
    configured ones (a bound it does not give stays); with None the dimension is made static
    (removed, and the argument's table with it when empty; ``dynamic = {}`` stays)."""
    document = tomlkit.parse(pyproject)
    modules = document.get("tool", {}).get("fx-lsp", {}).get("modules", {})
    module = modules.get(qualified_name, modules.get(class_name))
    dynamic = module.get("dynamic") if isinstance(module, dict) else None
    if not isinstance(dynamic, dict):
        return pyproject
    given = {} if bounds is None else {
        key: bound for key, bound in zip(("min", "max"), bounds, strict=True)
        if bound is not None}
    for argument in list(dynamic):
        dims = dynamic[argument]
        if not isinstance(dims, dict):
            continue
        for index in list(dims):
            if _dim_name(dims[index]) != name:
                continue
            if bounds is None:
                del dims[index]
                continue
            if not isinstance(dims[index], dict):
                dims[index] = tomlkit.inline_table()
                dims[index]["name"] = name
            dims[index].update(given)
        if not dims:
            del dynamic[argument]
    # An empty ``dynamic`` stays: the shapes are then meant static, and no batch dimension
    # is tried (FX407) where the code pins it.
    fixed = tomlkit.dumps(document)
    return fixed if tomlkit.parse(fixed) != tomlkit.parse(pyproject) else pyproject


def add_concrete_arg(pyproject: str, qualified_name: str, argument: str, value: Any) -> str:
    """Set ``concrete-args = {argument = value}`` under ``[tool.fx-lsp.modules."<class>"]``."""
    document = tomlkit.parse(pyproject)
    module = _module_table(document, qualified_name)
    if "concrete-args" not in module:
        module["concrete-args"] = tomlkit.inline_table()
    concrete = module["concrete-args"]
    if argument in concrete and concrete[argument] == value:
        return pyproject
    concrete[argument] = value
    return tomlkit.dumps(document)


def set_onnx_opset(pyproject: str, opset: int) -> str:
    """``onnx-opset = <opset>`` under ``[tool.fx-lsp]``: the onnx mode checks that export."""
    document = tomlkit.parse(pyproject)
    table = _fx_table(document)
    if table.get("onnx-opset") == opset:
        return pyproject
    table["onnx-opset"] = opset
    return tomlkit.dumps(document)
