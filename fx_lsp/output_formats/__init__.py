"""The output formats of ``fx-lsp check``, one module each as ruff keeps them: ``full``,
``concise``, ``json`` (``fx_lsp.json_report``), ``github``, ``sarif`` and ``junit``, and
``--statistics``. Each prints a ``CheckRun``; none traces.

A format's module is imported when it is written: ``full`` plans fixes with libcst, and
``fx-lsp merge`` or ``--help`` should not pay for that at every start."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fx_lsp.check import CheckRun
    from fx_lsp.shards import Shard

FORMATS = ("full", "concise", "json", "github", "sarif", "junit")


def write(run: CheckRun, output_format: str, stream: TextIO, shard: Shard | None = None,
          show_not_traced: bool | None = None) -> None:
    from fx_lsp.check import forget_notebooks

    forget_notebooks()  # notebooks as they are now: a fix may have edited them
    if output_format == "full":
        from fx_lsp.output_formats.full import full
        full(run, stream, show_not_traced=show_not_traced)
    elif output_format == "concise":
        from fx_lsp.output_formats.concise import concise
        concise(run, stream)
    elif output_format == "github":
        from fx_lsp.output_formats.github import github
        github(run, stream)
    elif output_format == "junit":
        from fx_lsp.output_formats.junit import junit
        stream.write(junit(run) + "\n")
    else:
        from fx_lsp.json_report import json_report
        from fx_lsp.output_formats.sarif import sarif
        data = json_report(run, shard) if output_format == "json" else sarif(run, shard)
        json.dump(data, stream, indent=2)
        stream.write("\n")
