"""The output formats of ``fx-lsp check``, one module each as ruff keeps them: ``full``,
``concise``, ``json`` (``fxcore.reporting.json_report``'s data, which ``fx-lsp mcp`` returns
too), ``github``, ``sarif`` and ``junit``, and ``--statistics``. Each renders a
``fxcore.reporting.shown.ShownReport``, whose places and notes are resolved: none traces, none
goes back to the run.

A format's module is imported when it is written: ``full`` plans fixes with libcst, and
``fx-lsp merge`` or ``--help`` should not pay for that at every start."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fxcore.api.shards import Shard
    from fxcore.reporting.shown import ShownReport

FORMATS = ("full", "concise", "json", "github", "sarif", "junit")


def write(report: ShownReport, output_format: str, stream: TextIO,
          shard: Shard | None = None) -> None:
    if output_format == "full":
        from fx_lsp.cli.output_formats.full import full
        full(report, stream)
    elif output_format == "concise":
        from fx_lsp.cli.output_formats.concise import concise
        concise(report, stream)
    elif output_format == "github":
        from fx_lsp.cli.output_formats.github import github
        github(report, stream)
    elif output_format == "junit":
        from fx_lsp.cli.output_formats.junit import junit
        stream.write(junit(report) + "\n")
    else:
        from fx_lsp.cli.output_formats.sarif import sarif
        from fxcore.api.shards import shard_json
        from fxcore.reporting.json_report import json_report
        data = json_report(report, shard_json(shard) if shard else None) \
            if output_format == "json" else sarif(report, shard)
        # One write: ``json.dump`` writes each of its pieces (a million for a file of 10,000
        # classes, seconds of writes).
        stream.write(json.dumps(data, indent=2) + "\n")
