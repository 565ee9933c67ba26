"""Lifecycle handlers: initialize (settings), initialized (engine, file watchers, the
network isolation line), shutdown, exit, and settings changed by the client."""

from __future__ import annotations

import asyncio
import uuid

from lsprotocol import types

from fx_lsp.server.handlers import Handlers
from fx_lsp.server.protocol import (
    guarded,
)
from fx_lsp.server.session import Session

handlers = Handlers()


@handlers.feature(types.INITIALIZE)
@guarded()
def initialize(session: Session, params: types.InitializeParams) -> None:
    session.settings.apply(params.initialization_options)


@handlers.feature(types.INITIALIZED)
@guarded()
async def initialized(session: Session, params: types.InitializedParams) -> None:
    if session.server.process_id is not None:
        session.watcher = asyncio.ensure_future(session.watch_client(session.server.process_id))
    session.messages.report_torch(session.torch)
    if session.tracing_on():
        session.engine.ensure_session()
    elif not session.settings.options.trusted:
        session.messages.report_untrusted()
    session.send_status()
    watched = session.server.client_capabilities.workspace
    if (
        watched
        and watched.did_change_watched_files
        and watched.did_change_watched_files.dynamic_registration
    ):
        await session.server.client_register_capability_async(
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
        session.engine.watches_files = True
    await session.messages.log_network_isolation()


@handlers.feature(types.SHUTDOWN)
@guarded()
def shutdown(session: Session, params: None) -> None:
    for document in session.documents:
        session.documents.outdate(document)
    session.engine.close(wait=False)


@handlers.feature(types.EXIT)
@guarded()
def exit_(session: Session, params: None) -> None:
    session.close()


@handlers.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@guarded()
def did_change_configuration(
    session: Session, params: types.DidChangeConfigurationParams
) -> None:
    before = session.settings.options
    session.settings.apply(params.settings)
    if session.settings.options.trusted != before.trusted:
        session.set_trusted(session.settings.options.trusted)
    elif session.settings.options != before and session.settings.options.trusted:
        session.documents.retrace_all()
