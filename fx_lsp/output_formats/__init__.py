"""The output formats of ``fx-lsp check``, one module each as ruff keeps them: ``full``,
``concise``, ``json`` (``fx_lsp.json_report``), ``github``, ``sarif`` and ``junit``, and
``--statistics``. Each prints a ``CheckRun``; none traces."""

from __future__ import annotations

import json
from typing import TextIO

from fx_lsp.check import CheckRun, forget_notebooks
from fx_lsp.json_report import json_report
from fx_lsp.output_formats.concise import concise
from fx_lsp.output_formats.full import full
from fx_lsp.output_formats.github import github
from fx_lsp.output_formats.junit import junit
from fx_lsp.output_formats.sarif import sarif
from fx_lsp.output_formats.statistics import statistics
from fx_lsp.shards import Shard

__all__ = ["FORMATS", "concise", "full", "github", "json_report", "junit", "sarif",
           "statistics", "write"]

FORMATS = ("full", "concise", "json", "github", "sarif", "junit")


def write(run: CheckRun, output_format: str, stream: TextIO, shard: Shard | None = None,
          show_not_traced: bool | None = None) -> None:
    forget_notebooks()  # notebooks as they are now: a fix may have edited them
    if output_format == "full":
        full(run, stream, show_not_traced=show_not_traced)
    elif output_format == "concise":
        concise(run, stream)
    elif output_format == "github":
        github(run, stream)
    elif output_format == "junit":
        stream.write(junit(run) + "\n")
    else:
        data = json_report(run, shard) if output_format == "json" else sarif(run, shard)
        json.dump(data, stream, indent=2)
        stream.write("\n")
