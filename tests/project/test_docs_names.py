"""Every module, name and file the documentation names exists: a page that names
``fxcore.worker.inputs.sources`` after the module moved sends a reader to nothing. Dotted
names of ``fxcore`` and ``fx_lsp`` resolve to a module, optionally followed by a name that
module defines; repository paths (``fxcore/...``, ``docs/...``, ``vscode-client/...``) exist;
a relative link leads to a file (and a heading of it, for a page MkDocs does not check); and in
a list that names a folder (``- `rules/`: the codes, `tracing.py` ...``), the files its item
and the items under it name are in that folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine_support import REPO_ROOT
from generated_pages import generated_pages

#: The pages: the docs site, the front page and the extension's page (the Marketplace's).
PAGES = sorted([REPO_ROOT / "README.md", REPO_ROOT / "vscode-client" / "README.md",
                *(REPO_ROOT / "docs").rglob("*.md")])
#: ``fxcore.host.engine.Engine.close``: a package's dotted name, maybe an attribute after it.
DOTTED = re.compile(r"(?<![\w./-])((?:fxcore|fx_lsp)(?:\.[A-Za-z_]\w*)+)")
#: The repository's folders a page may name a path in: ``fxcore/worker/job.py``, ``tests/``.
ROOTS = ("fxcore", "fx_lsp", "tests", "benchmarks", "scripts", "docs", "examples",
         "integrations", "vscode-client")
REPO_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(ROOTS)})/[\w./+-]*\w/?)")
#: ``[text](target)``: a link of Markdown, its target up to a title or the closing bracket.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)[^)]*\)")
#: A list item and the names in code spans of it.
ITEM = re.compile(r"^(\s*)[-*] (.*)$")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
#: A name in a code span that is a file or a folder (``json_edits.py``, ``notebook/``).
FILE_NAME = re.compile(r"^[\w.+-]+(?:/[\w.+-]+)*(?:\.(?:py|ts|mjs|js|sh|toml|json|yml)|/)$")
#: What the extension's build makes (``npm run package``), never committed (.gitignore).
BUILT = frozenset({"vscode-client/fx-lsp.vsix", "vscode-client/bundled/"})
#: Code: a fenced block or a code span, where ``[a](b)`` is Python rather than a link.
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
#: Names that are not modules: loggers.
NOT_MODULES = frozenset({"fxcore.workers"})
#: Names a module gives on demand (its ``__getattr__``).
ON_DEMAND = frozenset({"fx_lsp.__version__"})


def module_file(parts: list[str]) -> Path | None:
    base = REPO_ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defines(source: Path, name: str) -> bool:
    """Whether ``name`` is defined, assigned or imported at some level of ``source``."""
    text = source.read_text(encoding="utf-8")
    pattern = (rf"(?m)^\s*(?:(?:async\s+)?def|class)\s+{name}\b|^\s*{name}\s*[:=]"
               rf"|\bimport\b.*\b{name}\b|^\s+{name},?$|self\.{name}\s*[:=]")
    return re.search(pattern, text) is not None


def unresolved_dotted(name: str) -> bool:
    parts = name.split(".")
    for length in range(len(parts), 0, -1):
        found = module_file(parts[:length])
        if found is not None:
            if length == len(parts):
                return False
            return not defines(found, parts[length])
    return True


#: The docs site's pages made as it is built: they exist on the site, not in docs/.
GENERATED = frozenset(REPO_ROOT / "docs" / path for path in generated_pages())


def exists(path: Path) -> bool:
    return path.exists() or path.resolve() in GENERATED


def unresolved_path(path: str) -> bool:
    return path not in BUILT and not exists(REPO_ROOT / path.rstrip("/"))


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub and MkDocs' table of contents spell them."""
    headings = re.findall(r"(?m)^#+\s+(.*?)\s*$", page.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w -]", "", heading.lower()).replace(" ", "-") for heading in headings}


def broken_link(page: Path, target: str) -> bool:
    """Whether a relative link of ``page`` leads nowhere: no such file, or (in a page MkDocs
    does not build, which checks its own) no such heading. ``/x`` is the repository's ``x``."""
    if re.match(r"^[a-z][\w+.-]*:|^#", target):
        return False  # another site, or a heading of the page itself (MkDocs checks those)
    path, _, anchor = target.partition("#")
    found = (REPO_ROOT / path.lstrip("/")) if path.startswith("/") else page.parent / path
    if not exists(found):
        return True
    in_site = REPO_ROOT / "docs" in page.parents
    return bool(anchor) and not in_site and found.suffix == ".md" and found.exists() \
        and anchor not in anchors(found)


def unlisted_files(text: str) -> list[str]:
    """The names of files that are not in the folder of the list item they stand in: an item
    that starts with a folder (``- `rules/`: ...``, ``- `fxcore/`: ...``) is that folder,
    within its parent item's; a file or folder its text names (continued lines and items
    under it included) must be somewhere under it."""
    wrong: list[str] = []
    folders: list[tuple[int, Path | None]] = []  # the open items: their indent and folder
    for line in text.splitlines():
        item = ITEM.match(line)
        if item is not None:
            indent = len(item.group(1))
            while folders and folders[-1][0] >= indent:
                folders.pop()
            parent = folders[-1][1] if folders else None
            first = CODE_SPAN.match(item.group(2))
            folder = parent
            if first is not None and first.group(1).endswith("/"):
                # ``capture/<mode>/``: the folder of every mode, ``capture/``.
                name = first.group(1).split("<")[0].rstrip("/")
                if name.split("/")[0] in ROOTS:
                    folder = REPO_ROOT / name
                elif parent is not None:
                    folder = parent / name
                line = line.replace(first.group(0), "", 1)  # the folder is not in itself
            folders.append((indent, folder))
        elif not line.strip() or not line.startswith(" "):
            folders.clear()  # a paragraph ends the list
            continue
        folder = folders[-1][1] if folders else None
        if folder is None:
            continue
        for name in CODE_SPAN.findall(line):
            if FILE_NAME.match(name) and name.split("/")[0] not in ROOTS \
                    and not _under(folder, name.rstrip("/")):
                wrong.append(f"{folder.relative_to(REPO_ROOT)}/: {name}")
    return wrong


def _under(folder: Path, name: str) -> bool:
    return (folder / name).exists() or next(folder.rglob(name), None) is not None


def names_in(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    wrong = [name for name in sorted(set(DOTTED.findall(text)))
             if name not in NOT_MODULES | ON_DEMAND and unresolved_dotted(name)]
    for path in sorted(set(REPO_PATH.findall(text))):
        # A link relative to the page itself (docs/benchmarks/ beside docs/index.md).
        if unresolved_path(path) and not exists(page.parent / path):
            wrong.append(path)
    links = LINK.findall(CODE.sub("", text))
    wrong += [target for target in sorted(set(links)) if broken_link(page, target)]
    return wrong + unlisted_files(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_module_and_path_a_page_names_exists(page: Path) -> None:
    assert names_in(page) == []


def test_a_moved_module_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See `fxcore.worker.pipeline.job.Job`, `fxcore.host.engine.NoSuchThing`, "
                    "`fxcore.worker.no_such_module` and `fxcore/no_such_room/x.py`; "
                    "`fxcore.workers` logs.\n")
    assert names_in(page) == ["fxcore.host.engine.NoSuchThing", "fxcore.worker.no_such_module",
                              "fxcore/no_such_room/x.py"]


def test_a_missing_link_target_or_heading_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Its part\n")
    page.write_text("[a](other.md#its-part), [b](other.md#no-part), [c](gone.md), "
                    "[d](https://example.org/x), [e](#here), [f](/README.md#no-such-heading)\n")
    assert names_in(page) == ["/README.md#no-such-heading", "gone.md", "other.md#no-part"]


def test_a_file_missing_from_the_folder_its_list_names_is_found() -> None:
    text = ("- `fxcore/`: the engine.\n"
            "  - `workspace/`: `paths.py`, `notebook/` (`cells.py`), `no_such.py`,\n"
            "    and `gone.py` on a continued line; `fx_lsp/launch.py` from the root.\n"
            "    - `call_sites/`: `missing.py`\n"
            "  - `model/`: `job_spec.py`, `user_model.py`\n"
            "- `Net`: a user's `train.py` is no repository file.\n\n"
            "    `elsewhere.py` after the list\n")
    assert unlisted_files(text) == ["fxcore/workspace/: no_such.py", "fxcore/workspace/: gone.py",
                                    "fxcore/workspace/call_sites/: missing.py",
                                    "fxcore/model/: user_model.py"]
