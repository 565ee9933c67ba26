"""The packages the zygote may preload: top-level import names of the distributions installed
in this interpreter's site-packages.

Workers tell the engine which installed packages a job imported (``timm``, ``transformers``)
so that the zygote imports them once for every later child. Those names come from a process
that ran workspace code, so they are only a wish: the engine preloads a name only if it is on
this list, which it derives itself from the installed distributions' metadata, never from
anything a worker sends or a workspace holds.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import site
import sysconfig
from collections.abc import Iterable

_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_EXTENSION_SUFFIXES = (".py", ".so", ".pyd")


@functools.cache
def _site_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = [paths["purelib"], paths["platlib"], *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(folder) for folder in folders
                         if os.path.isdir(folder)}))


def _top_level_names(distribution: importlib.metadata.Distribution) -> set[str]:
    listed = distribution.read_text("top_level.txt")
    if listed:
        return {line.strip() for line in listed.splitlines() if line.strip()}
    names = set()
    for file in distribution.files or []:
        first = file.parts[0] if file.parts else ""
        if not first or first == ".." or first.endswith(_METADATA_SUFFIXES):
            continue
        if len(file.parts) > 1:
            names.add(first)  # a package folder
        elif first.endswith(_EXTENSION_SUFFIXES):
            names.add(first.split(".", 1)[0])  # a module, or an extension module
    return names


@functools.cache
def installed_import_names() -> frozenset[str]:
    """Every top-level import name that a distribution in site-packages provides."""
    names: set[str] = set()
    for distribution in importlib.metadata.distributions(path=list(_site_folders())):
        names |= _top_level_names(distribution)
    return frozenset(name for name in names if name.isidentifier())


def _found_in_site_packages(name: str) -> bool:
    """Whether importing ``name`` would load files from site-packages. An editable install
    (``pip install -e .`` of the workspace itself) lists its names like any distribution,
    but its files are the workspace's. Finding a top-level module's spec runs no code of
    it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    locations = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    folders = tuple(os.path.join(folder, "") for folder in _site_folders())
    return bool(locations) and all(
        isinstance(location, str) and os.path.realpath(location).startswith(folders)
        for location in locations)


def preloadable(names: Iterable[str]) -> list[str]:
    """Those of ``names`` that installed distributions provide from site-packages, sorted."""
    installed = installed_import_names()
    return sorted({name for name in names
                   if name in installed and _found_in_site_packages(name)})
