"""The ``[tool.fx-lsp]`` table of a workspace's ``pyproject.toml``, parsed into typed options.

Example::

    [tool.fx-lsp]
    leaf-modules = ["models.layers:Block"]
    autowrap-functions = ["models.ops:pad_same"]
    autowrap-modules = ["models.ops"]
    tracer = "models.tracing:MyTracer"
    timeout = 20
    file-timeout = 300       # all of one file's classes; those not reached are not traced
    memory-limit-mb = 8192
    exclude = ["*_test.py"]
    guess-arguments = true   # synthesize constructor arguments nobody configured
    modes = ["fx"]           # capture modes, each giving its own verdict per class
    export-strict = false    # export mode: also export with strict=True (FX405)
    onnx-opset = 20          # onnx mode: the opset_version torch.onnx.export is checked at
    device = "auto"          # judge classes for "cpu", "cuda", or as their code is written
    per-file-device = {"kernels/*.py" = "cuda"}   # over device, for matching files
    module-mode = "auto"     # "train" or "eval": the nn.Module mode export and compile judge in
    select = ["FX", "GB"]    # which codes are reported (prefixes), as in ruff
    ignore = ["FX200"]
    per-file-ignores = {"tests/*" = ["FX1"]}

    [tool.fx-lsp.modules."models.net:Net"]
    call = "Net(width=64, depths=(1, 2), norm=None)"   # a call pasted from a README, or:
    factory = "models.net:build_net"   # optional callable; gets args/kwargs
    args = []
    kwargs = {width = 64}
    concrete-args = {use_cache = false}
    device = "cuda"          # over per-file-device and device, for this class
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from fxcore.model.capture_modes import available_modes, modes_problem, ordered_modes
from fxcore.model.job_spec import EngineConfig, ReportConfig
from fxcore.model.module_modes import module_mode_problem
from fxcore.workspace.config_keys import PROJECT_KEY_NAMES, key_names
from fxcore.workspace.file_access import (
    MAX_FILE_BYTES,
    UTF8_BOM,
    read_bytes,
    too_large_reason,
)
from fxcore.workspace.module_config import (
    checked_device,
    import_path,
    parse_module_config,
    quoted,
)

#: Keys of ``[tool.fx-lsp]`` that the editor uses (``fx_lsp.features.initialization_options``
#: validates them; the engine only knows they are not unknown). ``fx-lsp check`` reads
#: ``show-not-traced`` too (``fxcore.api.check``).
EDITOR_KEYS = key_names("editor")
#: Keys of ``[tool.fx-lsp]`` that choose what is reported (``ReportConfig``), not how to trace.
REPORT_KEYS = key_names("report")
#: A code or a prefix of one: ``FX``, ``FX0``, ``FX002``; ``GB``, ``GB0170`` (graph breaks).
_CODE_PREFIX = re.compile(r"FX[0-9]{0,3}|GB[0-9]{0,4}")
#: The first opset ``torch.onnx.export`` has ever taken (the exporter of a torch says which
#: it can translate to: the onnx mode checks that).
MIN_ONNX_OPSET = 7
#: What ``pass-env`` may list: a variable's name, or a prefix of names ending in ``*``.
_PASS_ENV_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")
#: Longer time-outs are a mistake (and `inf` cannot be waited on): a day.
MAX_TIMEOUT_SECONDS = 86400.0
#: More than this (1 TiB) overflows the address-space limit set on each worker child.
MAX_MEMORY_LIMIT_MB = 1 << 20


def is_valid_timeout(value: object) -> bool:
    """A positive, finite number of seconds, at most ``MAX_TIMEOUT_SECONDS``."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and 0 < value <= MAX_TIMEOUT_SECONDS)


@dataclass
class ProjectConfig:
    """What one ``pyproject.toml`` says to fx-lsp."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    #: The raw ``[tool.fx-lsp]`` table: the editor reads its own keys (``EDITOR_KEYS``) here.
    table: dict[str, Any] = field(default_factory=dict)
    #: One message per problem (an invalid value keeps its default).
    problems: list[str] = field(default_factory=list)
    #: Why the file could not be parsed at all (then nothing of it applies, and ``problems``
    #: holds this message alone); None when it was parsed.
    unreadable: str | None = None


def _unreadable(path: str, why: str) -> ProjectConfig:
    message = f"{path}: cannot read [tool.fx-lsp]: {why}"
    return ProjectConfig(problems=[message], unreadable=message)


def read_project_config(workspace_root: str, text: str | None = None) -> ProjectConfig:
    """The one reader of ``[tool.fx-lsp]``: from ``text`` (an editor's unsaved buffer of
    ``<workspace_root>/pyproject.toml``) or else from the file."""
    path = os.path.join(workspace_root, "pyproject.toml")
    try:
        if text is None:
            if not os.path.isfile(path):
                return ProjectConfig()
            # A regular file of at most MAX_FILE_BYTES, or UnreadableFile saying why not.
            text = read_bytes(path).removeprefix(UTF8_BOM).decode("utf-8")
        elif len(text) > MAX_FILE_BYTES:  # an editor's buffer, held to the file's bound
            return _unreadable(path, too_large_reason(MAX_FILE_BYTES))
    except UnicodeDecodeError as error:
        return _unreadable(path, f"the file is not UTF-8 text ({error.reason} at byte "
                                 f"{error.start})")
    except OSError as error:
        return _unreadable(path, str(error))
    document, why = _parsed_toml(text)
    skipped: list[str] = []
    if document is None:
        # Only fx-lsp's own table matters: another tool's that tomllib cannot read (a
        # 5,000-deep array under [tool.other]) is skipped, and fx-lsp's read alone.
        own, mentioned_elsewhere = _fx_lsp_sections(text)
        document, own_why = _parsed_toml(own)
        if document is None or mentioned_elsewhere:
            # fx-lsp's own table is what cannot be read (a broken header is not found as
            # one): nothing of it applies, as when the whole file cannot be parsed.
            return _unreadable(path, own_why or why or "")
        skipped = [f"{path}: only [tool.fx-lsp] was read; the rest cannot be parsed ({why})"]
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        return ProjectConfig(problems=[f"{path}: 'tool' must be a table; [tool.fx-lsp] ignored"])
    table = tool.get("fx-lsp", {})
    engine, problems = parse_config(table, source=f"{path} [tool.fx-lsp]")
    report, report_problems = parse_report_config(table, source=f"{path} [tool.fx-lsp]")
    return ProjectConfig(engine, report, table if isinstance(table, dict) else {},
                         skipped + problems + report_problems)


def _parsed_toml(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """``text`` parsed as TOML, or None and why it cannot be."""
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as error:
        return None, str(error)
    except (RecursionError, MemoryError):
        # tomllib parses nested arrays and inline tables by recursion: thousands of levels
        # exhaust the stack (or memory) of whichever process reads the file.
        return None, "arrays or tables are nested too deeply to parse"


#: A table header line, ``[tool.fx-lsp]`` or ``[[tool.other.list]]`` (with a comment): dotted
#: keys, bare or quoted (``[tool.fx-lsp.modules."model:Net"]``).
_KEY = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""
_TABLE_HEADER = re.compile(
    rf"^[ \t]*\[\[?[ \t]*({_KEY}(?:[ \t]*\.[ \t]*{_KEY})*)[ \t]*\]\]?[ \t]*(#.*)?$")
#: What starts like a header but is not one (``[tool.other`` without its bracket).
_BROKEN_HEADER = re.compile(r"""^[ \t]*\[\[?[ \t]*[A-Za-z0-9_"'-]""")
_OWN_TABLE = re.compile(r"""tool[ \t]*\.[ \t]*(fx-lsp|"fx-lsp"|'fx-lsp')([ \t]*\.|$)""")


def _fx_lsp_sections(text: str) -> tuple[str, bool]:
    """The lines of ``text``'s ``[tool.fx-lsp]`` table and its sub-tables, each from its
    header to the next header (what is read of a file whose other tables cannot be parsed),
    and whether ``fx-lsp`` is named outside them (its own table, in a form not found)."""
    kept: list[str] = []
    own = mentioned_elsewhere = False
    for line in text.splitlines():
        header = _TABLE_HEADER.match(line)
        if header is not None:
            own = _OWN_TABLE.match(header[1]) is not None
        elif _BROKEN_HEADER.match(line):
            own = False  # another table's header that cannot be read ends fx-lsp's
        if own:
            kept.append(line)
        elif "fx-lsp" in line.partition("#")[0]:
            mentioned_elsewhere = True
    return "\n".join(kept), mentioned_elsewhere


def load_config(workspace_root: str, text: str | None = None) -> tuple[EngineConfig, list[str]]:
    """The engine's part of ``read_project_config``: the config and one message per problem."""
    found = read_project_config(workspace_root, text)
    return found.engine, found.problems



def _flag(table: dict[str, Any], key: str, source: str, problems: list[str]) -> bool | None:
    """A true/false key: its value, or None when absent or not a boolean (a problem)."""
    value = table.get(key)
    if value is None or isinstance(value, bool):
        return value
    problems.append(f"{source}: '{key}' must be true or false; ignored")
    return None


def parse_config(table: Any, source: str = "[tool.fx-lsp]") -> tuple[EngineConfig, list[str]]:
    """Type-check a ``[tool.fx-lsp]`` table."""
    config = EngineConfig()
    problems: list[str] = []
    if not isinstance(table, dict):
        return config, [f"{source}: expected a table"]

    def string_list(key: str) -> list[str] | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
        problems.append(f"{source}: '{key}' must be a list of strings; ignored")
        return None

    for key, attribute in (
        ("leaf-modules", "leaf_modules"),
        ("autowrap-functions", "autowrap_functions"),
        ("autowrap-modules", "autowrap_modules"),
        ("exclude", "exclude"),
    ):
        value = string_list(key)
        if value is not None:
            setattr(config, attribute, value)

    pass_env = string_list("pass-env")
    if pass_env is not None:
        bad = [entry for entry in pass_env if not _PASS_ENV_ENTRY.fullmatch(entry)]
        if bad:
            problems.append(f"{source}: 'pass-env' takes variable names, or prefixes ending "
                            f"in '*' (such as \"WANDB_*\"): {quoted(bad[0])} is neither; "
                            "ignored")
        else:
            config.pass_env = pass_env

    tracer = import_path(table, "tracer", "pkg.mod:Tracer", source, problems)
    if tracer is not None:
        config.tracer = tracer

    for key, attribute in (("timeout", "timeout"), ("file-timeout", "file_timeout")):
        seconds = table.get(key)
        if seconds is None:
            continue
        if is_valid_timeout(seconds):
            setattr(config, attribute, float(seconds))
        else:
            problems.append(f"{source}: '{key}' must be a number of seconds above 0 and at "
                            f"most {MAX_TIMEOUT_SECONDS:g}; ignored")

    memory = table.get("memory-limit-mb")
    if memory is not None:
        if (isinstance(memory, int) and not isinstance(memory, bool)
                and 0 < memory <= MAX_MEMORY_LIMIT_MB):
            config.memory_limit_mb = memory
        else:
            problems.append(f"{source}: 'memory-limit-mb' must be a whole number from 1 to "
                            f"{MAX_MEMORY_LIMIT_MB}; ignored")

    guess = _flag(table, "guess-arguments", source, problems)
    if guess is not None:
        config.guess_arguments = guess
    export_strict = _flag(table, "export-strict", source, problems)
    if export_strict is not None:
        config.export_strict = export_strict
    onnx_opset = table.get("onnx-opset")
    if onnx_opset is not None:
        if isinstance(onnx_opset, int) and not isinstance(onnx_opset, bool) \
                and onnx_opset >= MIN_ONNX_OPSET:
            config.onnx_opset = onnx_opset
        else:
            problems.append(f"{source}: 'onnx-opset' must be a whole number, an ONNX opset "
                            f"of at least {MIN_ONNX_OPSET}; ignored")
    module_mode = table.get("module-mode")
    if module_mode is not None:
        problem = module_mode_problem(module_mode)
        if problem is None:
            config.module_mode = module_mode
        else:
            problems.append(f"{source}: 'module-mode' {problem}; ignored")

    config.device = checked_device(table.get("device"), f"{source}: 'device'",
                                   problems) or config.device
    per_file_device = table.get("per-file-device")
    if per_file_device is not None:
        if not isinstance(per_file_device, dict):
            problems.append(f"{source}: 'per-file-device' must be a table of glob = device")
        else:
            for pattern, value in per_file_device.items():
                device = checked_device(value, f"{source}: per-file-device.{pattern}",
                                        problems)
                if device is not None:
                    config.per_file_device[str(pattern)] = device

    modes = table.get("modes")
    if modes is not None:
        problem = modes_problem(modes)
        if problem is None:
            config.modes, unavailable = available_modes(ordered_modes(modes))
            problems.extend(f"{source}: 'modes': {line}" for line in unavailable)
        else:
            problems.append(f"{source}: 'modes' {problem}; ignored")

    modules = table.get("modules", {})
    if not isinstance(modules, dict):
        problems.append(f"{source}: 'modules' must be a table of tables")
        modules = {}
    for key, entry in modules.items():
        module_config, module_problems = parse_module_config(
            entry, f"{source} modules.{key!r}", str(key).rpartition(":")[2])
        problems.extend(module_problems)
        config.modules[key] = module_config

    problems.extend(f"{source}: unknown option '{key}'" for key in table
                    if key not in PROJECT_KEY_NAMES)
    return config, problems


def parse_report_config(table: Any, source: str = "[tool.fx-lsp]") -> tuple[ReportConfig,
                                                                           list[str]]:
    """``select``, ``ignore`` and ``per-file-ignores``: lists of code prefixes (``FX``,
    ``FX0``, ``FX002``)."""
    config = ReportConfig()
    problems: list[str] = []
    if not isinstance(table, dict):
        return config, problems

    def prefixes(value: Any, where: str) -> list[str] | None:
        if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            problems.append(f"{source}: '{where}' must be a list of codes such as \"FX002\"; "
                            "ignored")
            return None
        wrong = [item for item in value if not _CODE_PREFIX.fullmatch(item)]
        if wrong:
            problems.append(f"{source}: '{where}' has unknown codes {', '.join(wrong)} (codes "
                            "look like FX002, or prefixes such as FX0); they are ignored")
        return [item for item in value if _CODE_PREFIX.fullmatch(item)]

    for key in ("select", "ignore"):
        if key in table:
            found = prefixes(table[key], key)
            if found is not None:
                setattr(config, key, found)
    per_file = table.get("per-file-ignores")
    if per_file is not None:
        if not isinstance(per_file, dict):
            problems.append(f"{source}: 'per-file-ignores' must be a table of glob = [codes]")
        else:
            for pattern, value in per_file.items():
                found = prefixes(value, f"per-file-ignores.{pattern}")
                if found is not None:
                    config.per_file_ignores[str(pattern)] = found
    return config, problems
