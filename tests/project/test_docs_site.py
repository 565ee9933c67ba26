"""The documentation site (mkdocs.yml, built strict): a generated page for every code of the
registry and every configuration key the parser accepts, ``fx-lsp explain`` printing a code's
page, every command-line flag documented, and the diagnostics' links at the site's pages."""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from rich.markdown import Markdown

from fx_lsp.cli.arguments import build_parser
from fx_lsp.cli.main import main
from fx_lsp.features.initialization_options import Options, parse_options
from fxcore.model.job_spec import EngineConfig, ModuleConfig, ReportConfig
from fxcore.rules import RULES
from fxcore.rules.compile import GRAPH_BREAK_RULES
from fxcore.rules.documentation import (
    DOCS_URL,
    DOCS_URL_VARIABLE,
    GRAPH_BREAK_PAGE,
    code_pages,
    help_url,
)
from fxcore.workspace.config import parse_config, parse_report_config
from fxcore.workspace.config_keys import (
    MODULE_KEYS,
    PROJECT_KEYS,
    ConfigKey,
    configuration_markdown,
)
from fxcore.workspace.module_config import parse_module_config

from cli_options import with_options
from engine_support import REPO_ROOT
from generated_pages import generated_pages

OWN_RULES = [rule for rule in RULES if not rule.code.startswith("GB")]
#: Keys accepted before the table existed and documented nowhere: the table must keep them.
ONCE_UNDOCUMENTED = ("autowrap-functions", "guess-arguments", "per-file-device", "shape-hints")


def _toml_value(text: str) -> object:
    return tomllib.loads(f"value = {text}")["value"]


def _parsed(key: ConfigKey, value: object) -> tuple[object, object, list[str]]:
    """What the parser of ``key``'s table makes of ``key = value``, what it makes of nothing,
    and the problems it reports."""
    if key in MODULE_KEYS:
        config, problems = parse_module_config({key.name: value}, "[test]", "Net")
        return config, ModuleConfig(), problems
    if key.reader == "engine":
        config, problems = parse_config({key.name: value})
        return config, EngineConfig(), problems
    if key.reader == "report":
        config, problems = parse_report_config({key.name: value})
        return config, ReportConfig(), problems
    options, problems = parse_options({}, {key.name: value})
    return options, Options(), problems


@pytest.mark.parametrize("key", [*PROJECT_KEYS, *MODULE_KEYS], ids=lambda key: key.name)
def test_each_documented_key_is_parsed_as_documented(key: ConfigKey) -> None:
    """The example is accepted and changes something; the default is the parser's."""
    configured, default, problems = _parsed(key, _toml_value(key.example))
    assert problems == [] and configured != default, key.name
    if key.default is not None:
        configured, default, problems = _parsed(key, _toml_value(key.default))
        assert problems == [] and configured == default, key.name
    else:
        assert key.unset, key.name


def test_the_parser_accepts_the_documented_keys_and_no_other() -> None:
    page = configuration_markdown(DOCS_URL_VARIABLE, DOCS_URL)
    for key in [*PROJECT_KEYS, *MODULE_KEYS]:
        assert f"### `{key.name}`\n\n" in page, key.name
        assert f"- Example: `{key.name} = {key.example}`" in page, key.name
    for name in ONCE_UNDOCUMENTED:
        assert f"### `{name}`" in page
    assert parse_config({"no-such-key": 1})[1] == ["[tool.fx-lsp]: unknown option 'no-such-key'"]
    assert parse_module_config({"no-such-key": 1}, "[m]")[1] == \
        ["[m]: unknown option 'no-such-key'"]
    assert DOCS_URL_VARIABLE in page


def test_every_code_has_its_generated_page() -> None:
    pages = code_pages()
    index = pages["codes/index.md"]
    for rule in OWN_RULES:
        page = pages[f"codes/{rule.code}.md"]
        assert page.startswith(f"# {rule.code}: {rule.title.rstrip('.')}\n"), rule.code
        happened, _, fix = rule.docs.partition("\nFix: ")
        assert f"## What happened\n\n{happened.strip()}\n" in page, rule.code
        assert f"## How to fix\n\n{fix[:1].upper()}{fix[1:].strip()}\n" in page, rule.code
        assert f"| [{rule.code}]({rule.code}.md) |" in index, rule.code
    graph_breaks = pages[f"codes/{GRAPH_BREAK_PAGE}.md"]
    assert f"[{GRAPH_BREAK_PAGE}]({GRAPH_BREAK_PAGE}.md)" in index
    for rule in GRAPH_BREAK_RULES:
        assert f"| {rule.code} |" in graph_breaks and rule.url in graph_breaks, rule.code
    assert set(pages) == {"codes/index.md", f"codes/{GRAPH_BREAK_PAGE}.md",
                          *(f"codes/{rule.code}.md" for rule in OWN_RULES)}


def _rendered(markdown: str, width: int) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, highlight=False).print(Markdown(markdown))
    return buffer.getvalue()


def test_explain_prints_the_page_of_the_code(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    pages = code_pages()
    for rule in OWN_RULES:
        assert main(["explain", rule.code.lower()]) == 0
        printed = capsys.readouterr().out
        assert printed == _rendered(pages[f"codes/{rule.code}.md"], 100), rule.code
    if GRAPH_BREAK_RULES:  # one graph break: its own text, which its family's page lists
        assert main(["explain", GRAPH_BREAK_RULES[0].code]) == 0
        assert GRAPH_BREAK_RULES[0].url in capsys.readouterr().out


def _documented_names(parser: argparse.ArgumentParser, command: str) -> Iterator[str]:
    """What the command line's page must name: each subcommand (``fx-lsp check``) and each
    flag of the program and its subcommands (``--output-format``, ``-q``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield f"{command} {name}"
                yield from _documented_names(subparser, f"{command} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield from action.option_strings


def test_every_command_and_flag_is_documented() -> None:
    """docs/cli.md, the command line's page as the site builds it (its tables of options made
    from the parser), names each subcommand and each of its flags."""
    page = with_options((REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    names = set(_documented_names(build_parser(), "fx-lsp"))
    assert {"fx-lsp check", "fx-lsp explain", "--output-format", "--shard"} <= names
    assert sorted(name for name in names
                  if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", page)) == []


def test_the_diagnostics_link_to_the_sites_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    yaml_load = pytest.importorskip("mkdocs.utils", reason="mkdocs (the docs extra) reads "
                                    "mkdocs.yml's !ENV").yaml_load
    monkeypatch.delenv(DOCS_URL_VARIABLE, raising=False)
    config = yaml_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_url"] == DOCS_URL
    assert help_url("FX002") == f"{DOCS_URL}codes/FX002/"
    if GRAPH_BREAK_RULES:  # a graph break links to PyTorch's page of it
        assert help_url(GRAPH_BREAK_RULES[0].code) == GRAPH_BREAK_RULES[0].url
    monkeypatch.setenv(DOCS_URL_VARIABLE, "https://docs.example.org/fx-lsp")
    config = yaml_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_url"] == "https://docs.example.org/fx-lsp"
    assert help_url("FX002") == "https://docs.example.org/fx-lsp/codes/FX002/"


def _api_names() -> set[str]:
    """The public functions and classes of fxcore.api's modules, which its page documents."""
    names = set()
    for module in (REPO_ROOT / "fxcore" / "api").glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names |= {node.name for node in tree.body if isinstance(
            node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_")}
    return names


@pytest.mark.slow  # a whole strict build, the API page read by mkdocstrings: over 100 s loaded
def test_the_site_builds_strict_with_every_generated_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    pytest.importorskip("material", reason="the docs extra (mkdocs-material) is not installed")
    pytest.importorskip("mkdocstrings", reason="the docs extra (mkdocstrings) is not installed")
    generated = generated_pages()
    monkeypatch.delenv(DOCS_URL_VARIABLE, raising=False)
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")  # Material's notice on every build
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                            "-d", str(site)], cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=900)
    assert build.returncode == 0, build.stdout + build.stderr
    for path in generated:  # MkDocs' directory URLs, as help_url writes them
        assert (site / path.removesuffix(".md").removesuffix("index") / "index.html").is_file()
    for rule in OWN_RULES:
        page = help_url(rule.code).removeprefix(DOCS_URL)
        assert (site / page / "index.html").is_file(), rule.code
    configuration = (site / "configuration" / "index.html").read_text(encoding="utf-8")
    for key in [*PROJECT_KEYS, *MODULE_KEYS]:
        assert f"<code>{key.name}</code>" in configuration, key.name
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert {"run_jobs", "explain", "plan_fixes", "diff_revisions"} <= _api_names()
    assert sorted(name for name in _api_names()
                  if not re.search(rf'id="fxcore\.api\.\w+\.{name}"', api)) == []
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "<code>--untrusted</code>" in cli and "options of fx-lsp" not in cli
