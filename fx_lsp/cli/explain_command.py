"""``fx-lsp explain CODE`` and ``fx-lsp explain --all``: the documentation of the codes
fx-lsp reports (``fxcore.api.explain``), as Markdown on a terminal or as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json

from fxcore.api.explain import all_records, explain_record, known_codes


def explain_command(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    if arguments.all == (arguments.code is not None):
        parser.error("give a CODE, or --all for every code" if not arguments.all
                     else "give a CODE or --all, not both")
    if arguments.all:
        records = all_records()
        if arguments.output_format == "json":
            print(json.dumps([dataclasses.asdict(record) for record in records], indent=2))
        else:
            width = max(len(record.code) for record in records)
            print("\n".join(f"{record.code:<{width}}  {record.summary}" for record in records))
        return 0
    record = explain_record(arguments.code)
    if record is None:
        parser.error(f"unknown code {arguments.code}; the codes are {', '.join(known_codes())}")
    if arguments.output_format == "json":
        print(json.dumps(dataclasses.asdict(record), indent=2))
        return 0
    from rich.console import Console
    from rich.markdown import Markdown

    # The very Markdown of the code's page on the documentation site: one text in both.
    Console(highlight=False).print(Markdown(record.explanation))
    return 0
