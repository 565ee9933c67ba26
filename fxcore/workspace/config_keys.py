"""Every key of ``[tool.fx-lsp]`` and of a class's ``[tool.fx-lsp.modules."pkg.mod:Class"]``,
declared once: its type, default, a line of description and an example. The parsers
(``fxcore.workspace.config``, ``fxcore.workspace.module_config``) accept these keys and no
others, and the documentation site's configuration page is rendered from this table
(``configuration_markdown``), so a key cannot be accepted without being documented."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: Who reads a key of ``[tool.fx-lsp]``: the engine (``EngineConfig``), the report
#: (``ReportConfig``: which codes are shown) or the editor (the server's ``Options``).
Reader = Literal["engine", "report", "editor"]


@dataclass(frozen=True)
class ConfigKey:
    name: str
    #: What a valid value is, in words.
    type: str
    #: The default as TOML; None when the key is unset by default (``unset`` says what then).
    default: str | None
    #: One line of Markdown: what the key does.
    description: str
    #: A TOML value the parser accepts, shown as ``name = example``.
    example: str
    reader: Reader = "engine"
    #: What applies when the key is unset and has no TOML default.
    unset: str = ""


_DEVICE = '`"auto"`, `"cpu"` or `"cuda"`'

PROJECT_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("leaf-modules", "list of strings", "[]",
              "Submodule classes kept as one `call_module` node each instead of traced "
              "through: `pkg.mod:Class`, `pkg.mod.Class` or a bare class name.",
              '["models.layers:Block"]'),
    ConfigKey("autowrap-functions", "list of import paths", "[]",
              "Functions recorded as one `call_function` node each instead of traced "
              "through, as `torch.fx.wrap` would (torch.fx's `autowrap_functions`).",
              '["models.ops:pad_same"]'),
    ConfigKey("autowrap-modules", "list of module names", "[]",
              "Modules whose every function is recorded as one node (torch.fx's "
              "`autowrap_modules`, besides `math`), such as `einops` (FX008).",
              '["einops"]'),
    ConfigKey("tracer", "import path", None,
              "The `torch.fx.Tracer` subclass to trace with.",
              '"models.tracing:MyTracer"', unset="`torch.fx.Tracer`"),
    ConfigKey("timeout", "seconds, above 0 and at most 86400", "20",
              "How long one class may take in its worker before it is stopped (FX102).", "60"),
    ConfigKey("file-timeout", "seconds, above 0 and at most 86400", "300",
              "How long the classes of one file may take in all, after its import: the "
              "classes not reached by then are not traced (FX103, saying so), and those "
              "judged keep their verdicts.", "900"),
    ConfigKey("memory-limit-mb", "whole number from 1 to 1048576", "8192",
              "The address-space limit of each worker child, in MiB.", "16384"),
    ConfigKey("exclude", "list of globs", "[]",
              "Files never traced, in the CLI and the editor alike (relative to the "
              "workspace root, or file names).", '["*_test.py"]'),
    ConfigKey("guess-arguments", "true or false", "true",
              "Build classes nobody configured with synthesized constructor arguments "
              "(FX104); false: such classes are not traced (FX103).", "false"),
    ConfigKey("modes", 'list of `"fx"`, `"export"`, `"compile"`, `"onnx"`', '["fx"]',
              "The capture modes, each giving its own verdict per class "
              "([Capture modes](modes.md)).", '["fx", "export"]'),
    ConfigKey("export-strict", "true or false", "false",
              "Export mode: also export each class with `strict=True`, reporting what fails "
              "only there (FX405).", "true"),
    ConfigKey("onnx-opset", "whole number, at least 7", None,
              "Onnx mode: the `opset_version` `torch.onnx.export` is checked at (FX602).",
              "20", unset="the exporter's default opset"),
    ConfigKey("device", _DEVICE, '"auto"',
              "The device classes are judged for; `auto`: the one their code is written for, "
              "never the machine's ([GPU code](gpu.md)).", '"cuda"'),
    ConfigKey("per-file-device", "table of glob = device", "{}",
              "Over `device`, for the classes of matching files; the first pattern that "
              "matches decides.", '{"kernels/*.py" = "cuda"}'),
    ConfigKey("module-mode", '`"auto"`, `"train"` or `"eval"`', '"auto"',
              "The `nn.Module` mode export and compile judge a class in; `auto` exports in "
              "eval mode and compiles in both where they differ. torch.fx traces as built.",
              '"eval"'),
    ConfigKey("pass-env", "list of variable names, or prefixes ending in `*`", "[]",
              "Environment variables passed to workspace code besides the allowlisted ones "
              "([Security model](security.md)).", '["WANDB_MODE", "MYLIB_*"]'),
    ConfigKey("modules", "table of class = table", "{}",
              'Per-class settings, usually written as `[tool.fx-lsp.modules."pkg.mod:Class"]` '
              "tables: [their keys](#per-class-settings).",
              '{"models.net:Net" = {kwargs = {width = 64}}}'),
    ConfigKey("select", "list of codes or code prefixes", '["FX", "GB"]',
              "The codes reported, by prefix, as in ruff; the longest prefix of `select` and "
              "`ignore` that matches a code decides.", '["FX0", "FX1", "FX401"]',
              reader="report"),
    ConfigKey("ignore", "list of codes or code prefixes", "[]",
              "Codes not reported.", '["FX200"]', reader="report"),
    ConfigKey("per-file-ignores", "table of glob = list of codes", "{}",
              "Codes not reported in matching files (relative to the workspace root, or "
              "file names).", '{"tests/*" = ["FX1"]}', reader="report"),
    ConfigKey("run", '`"onSave"` or `"onType"`', '"onSave"',
              "When the editor checks a file: on each save, or as you type.", '"onType"',
              reader="editor"),
    ConfigKey("severity", '`"error"`, `"warning"`, `"information"` or `"hint"`', '"error"',
              "The severity the editor shows failures (errors) with.", '"warning"',
              reader="editor"),
    ConfigKey("show-not-traced", "true or false", "false",
              "Show FX103 on classes that were not traced; `fx-lsp check --output-format "
              "full` then lists them instead of counting them.", "true", reader="editor"),
    ConfigKey("debounce-ms", "milliseconds from 0 to 60000", "500",
              'With `run = "onType"`: how long typing pauses before a check.', "1000",
              reader="editor"),
    ConfigKey("shape-hints", "true or false", "true",
              "Inlay hints in the editor with the shape each line of `forward` produces "
              "([Graph and shapes](graph-and-shapes.md)).", "false", reader="editor"),
)

MODULE_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("call", "a Python call of the class, with literal arguments", None,
              "The constructor call, pasted from a README: numbers, strings, tuples, lists, "
              "dicts, `None` and calls of such.",
              '"Net(width=64, depths=(1, 2), norm=None)"',
              unset="arguments from a builder, a call site or guesses"),
    ConfigKey("factory", "import path", None,
              "A callable that returns the module; it gets `args` and `kwargs`.",
              '"models.net:build_net"', unset="the class itself"),
    ConfigKey("args", "list", "[]", "Positional constructor arguments.", "[64, 3]"),
    ConfigKey("kwargs", "table", "{}", "Keyword constructor arguments (TOML arrays arrive "
              "as lists).", "{width = 64}"),
    ConfigKey("concrete-args", "table", "{}",
              "`forward` arguments fixed while tracing (torch.fx's `concrete_args`).",
              "{use_cache = false}"),
    ConfigKey("concrete-none", "list of argument names", "[]",
              "`forward` arguments traced as `None` (TOML has no null; FX201).", '["mask"]'),
    ConfigKey("inputs", "table of argument = tensor type", None,
              'Example inputs, such as `"float32[2, 3, 224, 224]"` (dimensions may be named: '
              '`"float32[batch=2, 3, h=224, w=224]"`) ([Inputs](inputs.md)).',
              '{x = "float32[2, 3, 224, 224]"}',
              unset="inferred (annotations, call sites, the parent's run)"),
    ConfigKey("dynamic", 'table of argument = {dimension = name or {name, min, max}}', None,
              "Export mode: the dimensions kept dynamic (FX403 if the code specialises one); "
              "`{}` for static shapes.", '{x = {0 = {name = "batch", min = 2, max = 64}}}',
              unset="each input's batch and named sequence dimension is tried (FX407)"),
    ConfigKey("device", _DEVICE, None,
              "The device this class is judged for, over `per-file-device` and `device`.",
              '"cuda"', unset="`per-file-device`, else `device`"),
)

PROJECT_KEY_NAMES: frozenset[str] = frozenset(key.name for key in PROJECT_KEYS)
MODULE_KEY_NAMES: frozenset[str] = frozenset(key.name for key in MODULE_KEYS)


def key_names(reader: Reader) -> tuple[str, ...]:
    """The keys of ``[tool.fx-lsp]`` that ``reader`` reads, in the table's order."""
    return tuple(key.name for key in PROJECT_KEYS if key.reader == reader)


#: A code in a description, linked to its page.
_CODE = re.compile(r"\bFX[0-9]{3}\b")


def _linked(text: str) -> str:
    return _CODE.sub(lambda code: f"[{code[0]}](codes/{code[0]}.md)", text)


def _entries(keys: tuple[ConfigKey, ...]) -> str:
    """A heading per key (``configuration.md#timeout`` links to it), then what it is."""
    entries = []
    for key in keys:
        default = f"`{key.default}`" if key.default is not None else _linked(key.unset)
        entries.append(f"### `{key.name}`\n\n{_linked(key.description)}\n\n"
                       f"- Type: {key.type}\n- Default: {default}\n"
                       f"- Example: `{key.name} = {key.example}`\n")
    return "\n".join(entries)


_SECTIONS: tuple[tuple[Reader, str, str], ...] = (
    ("engine", "What is traced, and how", "The engine reads these for each class it checks."),
    ("report", "What is reported", "Which codes `fx-lsp check` and the editor show "
               "([Codes](codes/index.md)); a line's `# fx-lsp: ignore[FX001]` silences one."),
    ("editor", "The editor", "The language server reads these; its client's settings of the "
               "same names (camelCase) are overridden by them ([Editor](editor.md))."),
)


def configuration_markdown(docs_url_variable: str, docs_url: str) -> str:
    """The configuration page: every key, generated from this table."""
    parts = [
        "# Configuration\n\n"
        "fx-lsp reads the `[tool.fx-lsp]` table of the workspace's `pyproject.toml` (the "
        "nearest one upwards from each file). An invalid value is reported once and its "
        "default is used; an unknown key is reported too. "
        "[Getting started](getting-started.md#configuration) shows most keys together.\n"]
    for reader, title, intro in _SECTIONS:
        keys = tuple(key for key in PROJECT_KEYS if key.reader == reader)
        parts.append(f"\n## {title}\n\n{intro}\n\n{_entries(keys)}")
    parts.append(
        '\n## Per-class settings\n\nUnder `[tool.fx-lsp.modules."pkg.mod:Class"]` (or '
        '`[tool.fx-lsp.modules."Class"]`): how to build one class and what to trace it '
        "with.\n\n" + _entries(MODULE_KEYS))
    parts.append(
        "\n## The documentation's address\n\nEach diagnostic links to its code's page under "
        f"`{docs_url}` (LSP `codeDescription`, SARIF `helpUri`); a graph break, to PyTorch's "
        f"page of it. The environment variable `{docs_url_variable}` replaces that address, "
        "for a copy of this site served elsewhere; building the site with it set gives that "
        "copy the same address.\n")
    return "".join(parts)
