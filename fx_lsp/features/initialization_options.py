"""The server's settings, typed and validated in this one place.

They come from three sources, later ones winning: the client's ``initializationOptions``, its
``workspace/didChangeConfiguration`` (``settings.fxLsp`` or flat ``settings``), and the
``[tool.fx-lsp]`` table of each workspace folder's ``pyproject.toml`` (kebab-case keys there),
which ``fxcore.workspace.config.read_project_config`` reads, buffer or file, for the engine and the
editor
alike.
``trusted`` only ever comes from the client: a workspace must not be able to trust itself.
An invalid value gives one message and its default is used, except for ``trusted``, which
fails closed: an invalid value means untrusted (see ``parse_options``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from lsprotocol import types

from fx_lsp.bounded_input import shown
from fxcore.model.capture_modes import known_modes, modes_problem, ordered_modes
from fxcore.model.module_modes import MODULE_MODE_SETTINGS, module_mode_problem
from fxcore.workspace.config import EDITOR_KEYS

RunMode = Literal["onSave", "onType"]

SEVERITIES: dict[str, types.DiagnosticSeverity] = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


@dataclass(frozen=True)
class Options:
    run: RunMode = "onSave"
    #: Seconds one trace job may take before its worker is killed.
    timeout: float = 20.0
    #: Severity of FX0xx/FX1xx failures.
    severity: types.DiagnosticSeverity = types.DiagnosticSeverity.Error
    #: Information diagnostics on classes whose constructor needs arguments.
    show_not_traced: bool = False
    debounce_ms: int = 500
    #: Inlay hints with the shape each line of ``forward`` produces.
    shape_hints: bool = True
    #: Capture modes, each giving its own verdict per class (``[tool.fx-lsp] modes`` wins).
    modes: tuple[str, ...] = ("fx",)
    #: The export mode also exports with ``strict=True`` (FX405; ``[tool.fx-lsp]
    #: export-strict`` wins).
    export_strict: bool = False
    #: The ``nn.Module`` mode export and compile judge classes in (``[tool.fx-lsp]
    #: module-mode`` wins).
    module_mode: str = "auto"
    #: False: import and run no user code at all.
    trusted: bool = True


def _run(value: Any) -> RunMode | None:
    return value if value in ("onSave", "onType") else None


def _timeout(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


def _severity(value: Any) -> types.DiagnosticSeverity | None:
    return SEVERITIES.get(value.lower()) if isinstance(value, str) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _modes(value: Any) -> tuple[str, ...] | None:
    return ordered_modes(value) if modes_problem(value) is None else None


def _module_mode(value: Any) -> str | None:
    return value if module_mode_problem(value) is None else None


def _debounce(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 60_000
    return value if ok else None


# field name -> (client key, pyproject key or None, parser, what a valid value looks like)
_SPEC: dict[str, tuple[str, str | None, Callable[[Any], Any], str]] = {
    "run": ("run", "run", _run, '"onSave" or "onType"'),
    # The engine's config owns the project's `timeout` (fxcore.workspace.config): one reader, one
    # message.
    "timeout": ("timeout", None, _timeout, "a positive number of seconds"),
    "severity": ("severity", "severity", _severity, '"error", "warning", "information" or "hint"'),
    "show_not_traced": ("showNotTraced", "show-not-traced", _bool, "true or false"),
    "debounce_ms": ("debounceMs", "debounce-ms", _debounce, "milliseconds from 0 to 60000"),
    "shape_hints": ("shapeHints", "shape-hints", _bool, "true or false"),
    # The engine's config owns the project's `modes`, `export-strict` and `module-mode`
    # (fxcore.workspace.config), as `timeout`.
    "modes": ("modes", None, _modes, f"a list of capture modes ({', '.join(known_modes())})"),
    "export_strict": ("exportStrict", None, _bool, "true or false"),
    "module_mode": ("moduleMode", None, _module_mode,
                    " or ".join(f'"{mode}"' for mode in MODULE_MODE_SETTINGS)),
    "trusted": ("trusted", None, _bool, "true or false"),
}
assert set(_SPEC) == {f.name for f in fields(Options)}
assert {spec[1] for spec in _SPEC.values()} - {None} == set(EDITOR_KEYS)


def documented_settings() -> list[tuple[str, str, Any]]:
    """Each setting as a client sends it (``showNotTraced``), in words what a valid value is,
    and its default: what the editor settings page lists (scripts/editor_settings.py)."""
    defaults = Options()
    return [(client_key, expected, getattr(defaults, name))
            for name, (client_key, _, _, expected) in _SPEC.items()]


def client_settings(raw: Any) -> dict[str, Any]:
    """The fx-lsp part of ``initializationOptions`` or ``didChangeConfiguration`` settings."""
    if not isinstance(raw, Mapping):
        return {}
    nested = raw.get("fxLsp")
    return dict(nested) if isinstance(nested, Mapping) else dict(raw)


def parse_options(
    client: Mapping[str, Any], project: Mapping[str, Any] | None = None, where: str = ""
) -> tuple[Options, list[str]]:
    """Typed options from the client's settings overlaid by a pyproject table, and errors."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    for name, (client_key, project_key, parse, expected) in _SPEC.items():
        for source, key, label in (
            (client, client_key, "settings"),
            (project or {}, project_key, f"[tool.fx-lsp] of {where or 'pyproject.toml'}"),
        ):
            if key is None or key not in source:
                continue
            parsed = parse(source[key])
            if parsed is not None:
                values[name] = parsed
            elif name == "trusted":
                # Fail closed: a value that is not clearly true must not run workspace code.
                values[name] = False
                errors.append(
                    f"fx-lsp: invalid {key} = {shown(source[key])} in {label}: "
                    f"expected {expected}; "
                    "treating the workspace as untrusted (no code from it runs)."
                )
            else:
                errors.append(
                    f"fx-lsp: invalid {key} = {shown(source[key])} in {label}: "
                    f"expected {expected}; "
                    f"using {values.get(name, getattr(Options(), name))!r}."
                )
    return replace(Options(), **values), errors
