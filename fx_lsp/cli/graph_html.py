"""``fx-lsp graph PATH::Class -o graph.html``: one self-contained HTML file drawing a class's
traced graph with the VS Code graph view's own code (``assets/graph.js``, built from
``vscode-client/webview/``), for CI artifacts and people without VS Code. Its content
security policy allows no network access at all."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from pygls.uris import to_fs_path

from fx_lsp.features import graph_view
from fxcore.model.results import ModuleResult
from fxcore.reporting.shown import ShownFile
from fxcore.workspace.paths import source_text, split_lines

POLICY = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


def split_target(target: str) -> tuple[str, str | None]:
    """``path/to/file.py::Class`` -> (path, class); a bare path -> (path, None)."""
    path, separator, class_name = target.rpartition("::")
    return (path, class_name or None) if separator else (target, None)


#: ``<`` is the only character that can end a script element early ("</script") or make the
#: HTML parser's script states swallow the real end ("<!--<script>"); ``>`` and ``&`` go too,
#: as every HTML-safe JSON encoder does (Django's ``json_script``, Jinja's ``tojson``). JSON
#: strings may hold them as ``\u`` escapes; ``json.dumps`` already writes U+2028 and U+2029
#: (line ends to JavaScript before ES2019) as escapes, as it writes all non-ASCII.
_HTML_UNSAFE_JSON = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def _script_json(value: Any) -> str:
    """``value`` as JSON that can stand inside a ``<script>`` element, whatever its strings."""
    return json.dumps(value, ensure_ascii=True).translate(_HTML_UNSAFE_JSON)


def page(module: ModuleResult) -> str:
    """The page of ``module``'s graph: its first ``graph_view.NODE_LIMIT`` nodes, as the
    editor's first page shows them, with a note saying how many were left out. A 100,000-node
    graph drawn whole made a 28 MB page for a browser to lay out."""
    def lines_of(path: str) -> list[str]:
        return split_lines(source_text(path, {}) or "")

    return html_page(_cell_labels(graph_view.graph(module, lines_of, "utf-16",
                                                   limit=graph_view.NODE_LIMIT)))


def _cell_labels(value: Any) -> Any:
    """The answer with each location in a notebook labelled with its cell
    (``nb.ipynb:cell 3:4``): its URI is the notebook file's and its line the module's."""
    if isinstance(value, list):
        return [_cell_labels(item) for item in value]
    if not isinstance(value, dict):
        return value
    labelled = {key: _cell_labels(item) for key, item in value.items()}
    uri, where = labelled.get("uri"), labelled.get("range")
    if isinstance(uri, str) and uri.endswith(".ipynb") and isinstance(where, dict):
        shown = ShownFile(to_fs_path(uri) or uri).at(where["start"]["line"] + 1,
                                                     where["start"]["character"] + 1)
        if shown.cell is not None:
            labelled["label"] = f"{shown.path}:cell {shown.cell.cell_number}:{shown.cell.line}"
    return labelled


def html_page(data: dict[str, Any]) -> str:
    """The page drawing ``data``, an ``fxLsp/graph`` answer."""
    script = resources.files("fx_lsp").joinpath("assets/graph.js").read_text(encoding="utf-8")
    script = script.replace("</script", "<\\/script")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(data["qualifiedName"])}: torch.fx graph</title>
<style>html, body, #fx-graph {{ height: 100%; }}
#onnx-model {{ font-family: monospace; padding: 0 16px 16px; }}
#onnx-model td, #onnx-model th {{ text-align: left; padding: 1px 12px 1px 0; }}</style>
</head>
<body>
<div id="fx-graph"></div>
{onnx_section(data.get("onnx"))}<script>window.FX_GRAPH = {_script_json(data)};</script>
<script>{script}</script>
</body>
</html>
"""


def onnx_section(model: dict[str, Any] | None) -> str:
    """The onnx mode's translated ONNX model below the drawn exported program: a table of its
    nodes in graph order, each with the values it reads and writes (the edges, by name)."""
    if model is None:
        return ""
    count, nodes = model["nodeCount"], model["nodes"]
    shown = (f"the first {len(nodes):,} of its {count:,} nodes" if model["truncated"]
             else f"its {count:,} nodes")
    rows = "".join(
        f"<tr><td>{index}</td><td>{html.escape(_qualified(node))}</td>"
        f"<td>{html.escape(node['name'])}</td><td>{html.escape(', '.join(node['inputs']))}</td>"
        f"<td>{html.escape(', '.join(node['outputs']))}</td></tr>\n"
        for index, node in enumerate(nodes, 1))
    return (f'<section id="onnx-model">\n<h2>ONNX model</h2>\n'
            f"<p>The model torch.onnx.export translates the program above into, before its "
            f"optimization: {shown}.</p>\n"
            f"<table>\n<tr><th>#</th><th>op_type</th><th>node</th><th>inputs</th>"
            f"<th>outputs</th></tr>\n{rows}</table>\n</section>\n")


def _qualified(node: dict[str, Any]) -> str:
    """``Gemm``; ``pkg.domain::Op`` for an operator of another domain than ONNX's own."""
    return f"{node['domain']}::{node['opType']}" if node["domain"] else node["opType"]
