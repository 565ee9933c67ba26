"""Lifecycle handlers: initialize (settings), initialized (engine, file watchers, the
network isolation line), shutdown, exit, and settings changed by the client."""

from __future__ import annotations

import asyncio
import uuid

from lsprotocol import types

from fx_lsp.handlers import Handlers
from fx_lsp.protocol import (
    guarded,
)
from fx_lsp.server import FxLanguageServer

handlers = Handlers()


@handlers.feature(types.INITIALIZE)
@guarded()
def initialize(ls: FxLanguageServer, params: types.InitializeParams) -> None:
    ls.settings.apply(params.initialization_options)


@handlers.feature(types.INITIALIZED)
@guarded()
async def initialized(ls: FxLanguageServer, params: types.InitializedParams) -> None:
    if ls.process_id is not None:
        ls.watcher = asyncio.ensure_future(ls.watch_client(ls.process_id))
    ls.report_torch()
    if ls.tracing_on():
        ls.ensure_pipeline()
    elif not ls.settings.options.trusted:
        ls.report_untrusted()
    ls.send_status()
    watched = ls.client_capabilities.workspace
    if (
        watched
        and watched.did_change_watched_files
        and watched.did_change_watched_files.dynamic_registration
    ):
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=str(uuid.uuid4()),
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[
                                types.FileSystemWatcher(glob_pattern="**/*.py"),
                                types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                                # A notebook's constructor calls are call sites too.
                                types.FileSystemWatcher(glob_pattern="**/*.ipynb"),
                                # Constructor calls in documentation (fxcore.workspace.call_sites).
                                types.FileSystemWatcher(
                                    glob_pattern="**/*.{md,markdown,rst}"
                                ),
                            ]
                        ),
                    )
                ]
            )
        )
        ls.watches_files = True
    await ls.log_network_isolation()


@handlers.feature(types.SHUTDOWN)
@guarded()
def shutdown(ls: FxLanguageServer, params: None) -> None:
    for document in ls.documents:
        ls.documents.outdate(document)
    ls.close_engine(wait=False)


@handlers.feature(types.EXIT)
@guarded()
def exit_(ls: FxLanguageServer, params: None) -> None:
    ls.close_engine()
    ls.parse_process.close()


@handlers.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@guarded()
def did_change_configuration(
    ls: FxLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    before = ls.settings.options
    ls.settings.apply(params.settings)
    if ls.settings.options.trusted != before.trusted:
        ls.set_trusted(ls.settings.options.trusted)
    elif ls.settings.options != before and ls.settings.options.trusted:
        ls.documents.retrace_all()
