"""One class's table under ``[tool.fx-lsp.modules."pkg.mod:Class"]``: its constructor call
or arguments, factory, concrete and dynamic arguments, the device it is judged for, each
value checked with a message
naming where it is; and the table that applies to a class (``module_config_for``)."""

from __future__ import annotations

import ast
from typing import Any

from fxcore.model.container_spec import ContainerSpec, parse_input
from fxcore.model.job_spec import DEVICES, CallSite, DynamicDim, EngineConfig, ModuleConfig
from fxcore.workspace.call_sites import is_literal_call_argument
from fxcore.workspace.config_keys import MODULE_KEY_NAMES
from fxcore.workspace.parsing import ast_of

#: Deeper ``args``/``kwargs``/``concrete-args`` values are a mistake; a worker rebuilding
#: one 440 levels deep ran out of stack.
MAX_VALUE_DEPTH = 100
#: Characters of a rejected ``call`` quoted in its message.
_QUOTED_CALL_CHARACTERS = 80


def quoted(text: str) -> str:
    """``text`` for a message: its start only, since a pop-up or a CI log line cannot show
    100,000 characters."""
    if len(text) <= _QUOTED_CALL_CHARACTERS:
        return repr(text)
    return f"{text[:_QUOTED_CALL_CHARACTERS]!r}... ({len(text):,} characters)"


def _parse_call(text: Any, class_name: str, source: str) -> tuple[CallSite | None, str | None]:
    """``call = "ViT(dim=64, depth=(1, 2))"``: the class called with literal arguments."""
    example = f'call = "{class_name}(dim=64, depth=(1, 2))"'
    if not isinstance(text, str):
        return None, f"{source}: 'call' must be a string such as {example}"
    try:
        return _read_call(text, class_name, source, example)
    except (RecursionError, MemoryError):
        # ast parses, checks and unparses expressions by recursion: `C(1+1+...)` with
        # 100,000 terms exhausts the stack.
        return None, (f"{source}: 'call' is nested too deeply to read (such as a long chain "
                      f"of operators): {quoted(text)}")


def _read_call(text: str, class_name: str, source: str,
               example: str) -> tuple[CallSite | None, str | None]:
    try:
        node = ast_of(text.strip(), mode="eval").body
    except SyntaxError as error:
        return None, f"{source}: 'call' is not a Python call ({error.msg}): {quoted(text)}"
    if not isinstance(node, ast.Call) or ast.unparse(node.func).rpartition(".")[2] \
            != class_name:
        return None, f"{source}: 'call' must call {class_name}, such as {example}"
    if not is_literal_call_argument(node):
        return None, (f"{source}: 'call' may only pass literals (numbers, strings, tuples, "
                      f"lists, dicts, None) and calls of such: {quoted(text)}")
    return CallSite(site="pyproject.toml",
                    args=tuple(ast.unparse(argument) for argument in node.args),
                    kwargs=tuple((keyword.arg or "", ast.unparse(keyword.value))
                                 for keyword in node.keywords)), None


def _depth(value: Any) -> int:
    """How deep arrays and tables nest in a TOML value (1 for a flat array), without
    recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1)
                         for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def import_path(table: dict[str, Any], key: str, example: str, source: str,
                 problems: list[str]) -> str | None:
    """``table[key]`` if it is given as an import path (a non-empty string such as
    ``example``); anything else given is a problem."""
    value = table.get(key)
    if value is None or (isinstance(value, str) and value):
        return value
    problems.append(f"{source}: '{key}' must be an import path such as '{example}'")
    return None


def checked_device(value: Any, where: str, problems: list[str]) -> str | None:
    """``value`` if it is one of ``DEVICES``; None when not given, or (with a problem that
    says where) when it is not one."""
    if value is None or value in DEVICES:
        return value
    problems.append(f"{where} must be one of {', '.join(repr(name) for name in DEVICES)}; "
                    "ignored")
    return None


def parse_module_config(entry: Any, source: str,
                         class_name: str = "") -> tuple[ModuleConfig, list[str]]:
    config = ModuleConfig()
    problems: list[str] = []
    if not isinstance(entry, dict):
        return config, [f"{source}: expected a table"]
    factory = import_path(entry, "factory", "pkg.mod:make", source, problems)
    if factory is not None:
        config.factory = factory
    call = entry.get("call")
    if call is not None:
        config.call, problem = _parse_call(call, class_name, source)
        if problem:
            problems.append(problem)
    too_deep = (f"is nested more than {MAX_VALUE_DEPTH} levels deep (the worker rebuilds "
                "values by recursion); ignored")
    args = entry.get("args")
    if args is not None:
        if not isinstance(args, list):
            problems.append(f"{source}: 'args' must be a list")
        elif _depth(args) > MAX_VALUE_DEPTH:
            problems.append(f"{source}: 'args' {too_deep}")
        else:
            config.args = args
    for key, attribute in (("kwargs", "kwargs"), ("concrete-args", "concrete_args")):
        value = entry.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.append(f"{source}: '{key}' must be a table")
        elif _depth(value) > MAX_VALUE_DEPTH:
            problems.append(f"{source}: '{key}' {too_deep}")
        else:
            setattr(config, attribute, dict(value))
    concrete_none = entry.get("concrete-none")
    if concrete_none is not None:
        if isinstance(concrete_none, list) and all(isinstance(n, str) for n in concrete_none):
            # TOML has no null: arguments traced as None (concrete_args={name: None}).
            config.concrete_args.update(dict.fromkeys(concrete_none))
        else:
            problems.append(f"{source}: 'concrete-none' must be a list of argument names")
    inputs = entry.get("inputs")
    if inputs is not None:
        if not isinstance(inputs, dict):
            problems.append(f"{source}: 'inputs' must be a table such as "
                            '{x = "float32[2, 3, 224, 224]"}')
        else:
            for name, text in inputs.items():
                try:
                    config.inputs[str(name)] = parse_input(text if isinstance(text, str)
                                                           else repr(text))
                except ValueError as error:
                    problems.append(f"{source}: inputs.{name}: {error}")
    dynamic = entry.get("dynamic")
    if dynamic is not None:
        config.dynamic = _parse_dynamic(dynamic, f"{source}: dynamic", problems)
        for name in [name for name in config.dynamic
                     if isinstance(config.inputs.get(name), ContainerSpec)]:
            # torch.export would need one per tensor of the container: not spelled here.
            problems.append(f"{source}: dynamic.{name}: a container input has no dynamic "
                            "dimensions")
            del config.dynamic[name]
    config.device = checked_device(entry.get("device"), f"{source}: 'device'", problems)
    problems.extend(f"{source}: unknown option '{key}'" for key in entry
                    if key not in MODULE_KEY_NAMES)
    return config, problems


_DYNAMIC_EXAMPLE = ('{x = {0 = "batch"}} or {x = {0 = {name = "batch", min = 2, '
                    'max = 64}}}')


def _parse_dynamic(table: Any, where: str,
                   problems: list[str]) -> dict[str, dict[int, DynamicDim]]:
    """``dynamic = {argument = {dimension index = name or {name, min, max}}}``, each wrong
    entry left out with a problem that says why; one name has one range everywhere."""
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table such as {_DYNAMIC_EXAMPLE}")
        return {}
    parsed: dict[str, dict[int, DynamicDim]] = {}
    by_name: dict[str, DynamicDim] = {}
    for argument, dims in table.items():
        if not isinstance(dims, dict):
            problems.append(f"{where}.{argument} must be a table of dimension index -> "
                            f"name, such as {{0 = \"batch\"}}")
            continue
        for index, value in dims.items():
            place = f"{where}.{argument}.{index}"
            if not (isinstance(index, str) and index.isdigit()):
                problems.append(f"{place}: the key must be a dimension index (0, 1, ...)")
                continue
            dim, problem = _parse_dynamic_dim(value, place)
            if dim is None:
                problems.append(problem)
                continue
            if by_name.setdefault(dim.name, dim) != dim:
                problems.append(f"{place}: '{dim.name}' is given another range elsewhere "
                                f"(one name is one dimension)")
                continue
            parsed.setdefault(str(argument), {})[int(index)] = dim
    return parsed


def _parse_dynamic_dim(value: Any, place: str) -> tuple[DynamicDim | None, str]:
    """One dimension's ``"name"`` or ``{name, min, max}``, or None and why not."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        return None, f"{place}: expected a name or {{name = ..., min = ..., max = ...}}"
    unknown = sorted(set(value) - {"name", "min", "max"})
    if unknown:
        return None, f"{place}: unknown key(s) {', '.join(unknown)} (name, min, max)"
    name = value.get("name")
    if not (isinstance(name, str) and name.isidentifier()):
        return None, f"{place}: 'name' must be a Python identifier such as \"batch\""
    bounds = {key: value.get(key) for key in ("min", "max")}
    for key, bound in bounds.items():
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)
                                  or bound < 0):
            return None, f"{place}: '{key}' must be a non-negative integer"
    low, high = bounds["min"], bounds["max"]
    if low is not None and high is not None and low > high:
        return None, f"{place}: 'min' ({low}) is greater than 'max' ({high})"
    return DynamicDim(name, low, high), ""


def module_config_for(config: EngineConfig, module_name: str, class_name: str) -> ModuleConfig:
    """The entry for ``module_name:class_name``, else for the bare class name, else defaults."""
    return (
        config.modules.get(f"{module_name}:{class_name}")
        or config.modules.get(class_name)
        or ModuleConfig()
    )
