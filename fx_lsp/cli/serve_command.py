"""``fx-lsp serve``: the language server, on stdio or on a loopback address only."""

from __future__ import annotations

import argparse
import ipaddress


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (no name lookup: ``localhost`` counts,
    other names do not, as they could resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_command(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    from fx_lsp.server.serving import serve

    tcp = None
    if arguments.tcp:
        host, _, port = arguments.tcp.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            parser.error("--tcp takes HOST:PORT")
        if not is_loopback(host):
            parser.error(
                f"--tcp {arguments.tcp}: the server listens on a loopback address only "
                "(127.0.0.1, ::1 or localhost); anyone who can connect can make it run code"
            )
        tcp = (host, int(port))
    serve(tcp=tcp)
    return 0
