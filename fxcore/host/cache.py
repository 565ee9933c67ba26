"""A result cache, like ruff's: ``<workspace>/.fx-lsp-cache/``, ignored by git.

A file's result depends on its text, the configuration, the engine and torch versions, the
installed distributions, and the bytes of every workspace file its import compiled (a
submodule's file, a helper's file). All but the last are known before tracing and make the
entry's key (the file's content as it was when the job started); the imported files are only
known after, so each entry stores the hashes of the bytes the worker's import compiled
(recorded by ``fxcore.worker.source.import_overlay`` as the loader read them) and the workspace
folders where a module was looked for and not found; it is used only while all of them still
match (unsaved buffers count as the file's content). A file edited while it is traced, or one
that rewrites itself, thus never vouches for a result under its new text.

Entries are bound to this user: each file is an HMAC-SHA256 of its body, then the body (a
``CacheEntry`` as JSON, by ``fxcore.protocol.result_codec``). The HMAC's key is
``$FX_LSP_CACHE_KEY``
when set (CI shards that share a cache share it), else a random key kept in the user's cache
folder (``$XDG_CACHE_HOME/fx-lsp/cache-key``, else ``~/.cache/fx-lsp/cache-key``), never in
the workspace. A committed or restored entry made
without that key, a corrupt one, one of another shape, and anything that fails while one is
used are misses. Bodies are decoded into the model's dataclasses with every field's type
checked: nothing is unpickled.

The cache folder, its subfolders and entries are opened without following symbolic links:
a ``.fx-lsp-cache`` that is a link makes fx-lsp go without a cache there. Entries are read
only when they are regular files of at most ``MAX_ENTRY_BYTES``.

Results that a time-out or a crash produced are not stored: the next run may go better.
Import failures (FX100) are: the installed distributions are part of the key.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import importlib.machinery
import importlib.metadata
import logging
import os
import secrets
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from fxcore.host.cache_folder import CACHE_FOLDER, FOLDER_FLAGS, mark_cache_folder, write_entry
from fxcore.model.job_spec import TraceJob
from fxcore.model.not_reached import is_not_reached
from fxcore.model.results import Failure, FileResult
from fxcore.model.version import VERSION
from fxcore.protocol import result_codec
from fxcore.workspace.file_access import content_hash, read_bytes, text_hash
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.paths import job_import_location, source_text

logger = logging.getLogger(__name__)

#: The environment variable that holds the entries' HMAC key for runs that share a cache
#: (CI shards restoring one cache); otherwise a random key is kept per user.
KEY_VARIABLE = "FX_LSP_CACHE_KEY"
#: Larger entries are neither written nor read: a crafted or corrupt one cannot exhaust memory.
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_TRANSIENT_KINDS = frozenset({"timeout", "crash"})
_KEY_FILE = "cache-key"
_KEY_BYTES = 32


def _engine_fingerprint() -> str:
    """Changes whenever fxcore's code, torch or Python changes."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # all of fxcore
    for folder, subfolders, names in os.walk(package):
        subfolders.sort()  # the worker's code is in subpackages: every one counts
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    digest.update(os.path.relpath(path, package).encode() + handle.read())
    # The version from the package metadata: importing torch here would cost the CLI and
    # the server, which never run torch themselves, more than a second.
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        digest.update(importlib.metadata.version("torch").encode())
    digest.update(sys.version.encode())
    digest.update(VERSION.encode())
    return digest.hexdigest()


_FINGERPRINT = _engine_fingerprint()


@functools.cache
def environment_fingerprint() -> str:
    """A hash of the installed distributions and their versions, once per process: an import
    that failed for want of a package (or of its right version) is checked again after a
    ``pip install``."""
    installed = sorted({f"{dist.metadata['Name']}=={dist.version}"
                        for dist in importlib.metadata.distributions()})
    return hashlib.sha256("\n".join(installed).encode("utf-8", "surrogatepass")).hexdigest()


def user_cache_folder() -> str:
    """fx-lsp's folder in the user's cache (``$XDG_CACHE_HOME/fx-lsp``, else
    ``~/.cache/fx-lsp``). A relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification
    says: it would put the key in whatever folder fx-lsp runs in, a workspace perhaps."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fx-lsp")


def _read_regular(name: str, limit: int, folder: int) -> bytes | None:
    """The bytes of ``name`` in the folder open as ``folder`` if it is a regular file (not a
    link to one) of at most ``limit`` bytes, else ``None``: a FIFO, a device such as
    ``/dev/zero`` or an oversized file is never read. (Workspace files may be links; the
    cache's own files never are.)"""
    try:
        return read_bytes(name, limit, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return None


def _content_hash(path: str, overlays: dict[str, str]) -> str | None:
    """The hash of a file's current content (its unsaved buffer if any); ``None`` when it
    cannot be read. A notebook's is its module's (``source_text``), which is what its job
    imports: editing a cell that is left out of it (training, plots) keeps its results."""
    if is_notebook(path):
        text = source_text(path, overlays)
        return text_hash(text) if text is not None else None
    if path in overlays:
        return text_hash(overlays[path])
    try:
        return content_hash(read_bytes(path))
    except OSError:
        return None


def _absolute_overlays(job: TraceJob) -> dict[str, str]:
    return {os.path.abspath(path): text for path, text in job.overlays.items()}


#: The loaders the import system's file finder tries, as ``FileFinder`` takes them.
_FILE_LOADERS = (
    (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
    (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
)


def _still_missing(name: str, folders: list[str]) -> bool:
    """Whether the module ``name`` is still not found in ``folders`` (looked up as the
    import system looks, without importing anything). A new finder for each folder: the
    import system keeps one per folder (``sys.path_importer_cache``) with the folder's
    listing, refreshed when the folder's modification time changes: a file created within
    the same clock tick as the folder's last change leaves that time as it was, and the
    module just written would be missed (seen once in CI: an entry kept after the missing
    module appeared)."""
    return all(importlib.machinery.FileFinder(folder, *_FILE_LOADERS).find_spec(name) is None
               for folder in folders)


def _secret_from_folder(folder: str) -> bytes:
    """The key kept in ``folder``, created (0600, atomically) on first use."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    folder_fd = os.open(folder, FOLDER_FLAGS & ~os.O_NOFOLLOW)
    try:
        key = _read_regular(_KEY_FILE, _KEY_BYTES, folder_fd)
        if key is not None and len(key) == _KEY_BYTES:
            return key
        # Written under a private name, then linked into place: another process creating
        # the key at the same time wins the link, and every process ends up with its key.
        temporary = f".{_KEY_FILE}.{secrets.token_hex(8)}"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o600, dir_fd=folder_fd)
        try:
            with open(descriptor, "wb") as handle:
                handle.write(secrets.token_bytes(_KEY_BYTES))
            with contextlib.suppress(FileExistsError):
                os.link(temporary, _KEY_FILE, src_dir_fd=folder_fd, dst_dir_fd=folder_fd,
                        follow_symlinks=False)
        finally:
            os.unlink(temporary, dir_fd=folder_fd)
        key = _read_regular(_KEY_FILE, _KEY_BYTES, folder_fd)
        if key is None or len(key) != _KEY_BYTES:
            raise OSError(f"{os.path.join(folder, _KEY_FILE)} is not a key fx-lsp wrote")
        return key
    finally:
        os.close(folder_fd)


def cache_secret() -> bytes | None:
    """The key of the entries' HMACs (``None``: there is none to be had, and no cache)."""
    shared = os.environ.get(KEY_VARIABLE)
    if shared:
        return shared.encode("utf-8", "surrogatepass")
    folder = user_cache_folder()
    try:
        return _secret_from_folder(folder)
    except OSError as error:
        logger.warning("fx-lsp runs without a result cache: no key in %s (%s).", folder, error)
        return None


def job_parts(job: TraceJob) -> tuple[str, ...]:
    """What an entry's key holds of a job besides its file's text and the workspace's calls:
    the engine, the installed distributions, the file's path and import location (the other
    modules of a folder without ``__init__.py`` may make it a namespace package), the
    configuration, and whether compile's loop of calls runs (an editor's single-call stage
    turns it off: a verdict without the loop's findings is not one with them)."""
    location = job_import_location(job)
    return (_FINGERPRINT, environment_fingerprint(), os.path.abspath(job.path),
            location.module_name, location.sys_path_entry, repr(asdict(job.config)),
            repr(sorted(job.only_classes)), repr(job.loop_of_calls))


def still_current(job: TraceJob, dependencies: dict[str, str],
                  missing_modules: dict[str, list[str]]) -> bool:
    """Whether each file an entry depends on has the content it had (unsaved buffers count),
    and each module the import did not find is still not there."""
    overlays = _absolute_overlays(job)
    return (all(_content_hash(path, overlays) == digest
                for path, digest in dependencies.items())
            and all(_still_missing(name, folders) for name, folders in missing_modules.items()))


@dataclass
class CacheEntry:
    """What an entry file's body holds, decoded field by field by
    ``fxcore.protocol.result_codec``."""

    key: str
    #: Absolute path -> hash of the content the import compiled (``imported_hashes``).
    dependencies: dict[str, str]
    #: ``FileResult.missing_modules``: module name -> workspace folders it was not found in.
    missing_modules: dict[str, list[str]]
    result: FileResult


def _failures(result: FileResult) -> list[Failure]:
    return [*result.errors,
            *(f for m in [*result.modules, *result.derived_modules] for f in m.failures)]


class ResultCache:
    """Results of ``TraceJob``s stored below each job's workspace root."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self._secret: bytes | None = None
        self._secret_known = False
        #: Cache folders found to be symbolic links (each is reported once).
        self._refused: set[str] = set()

    def _key_secret(self) -> bytes | None:
        if not self._secret_known:
            self._secret, self._secret_known = cache_secret(), True
        return self._secret

    def _mac(self, body: bytes) -> bytes | None:
        secret = self._key_secret()
        if secret is None:
            return None
        return hmac.new(secret, body, hashlib.sha256).hexdigest().encode("ascii")

    @staticmethod
    def key(job: TraceJob) -> str | None:
        """The entry's key, from the job and its file's current content (``None``:
        unreadable)."""
        path = os.path.abspath(job.path)
        content = _content_hash(path, _absolute_overlays(job))
        if content is None:
            return None
        digest = hashlib.sha256()
        for part in (*job_parts(job), content, repr(sorted(job.call_sites.items())),
                     repr(sorted(job.other_call_sites.items())),
                     repr(sorted(job.keyword_values.items()))):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return digest.hexdigest()

    @contextlib.contextmanager
    def _folder(self, job: TraceJob, key: str, create: bool,
                kind: str | None = None) -> Iterator[int | None]:
        """A descriptor of the entry's folder (``<root>/.fx-lsp-cache/<key[:2]>``, or
        ``<root>/.fx-lsp-cache/<kind>/<key[:2]>`` for another kind of entry), each step
        opened without following a symbolic link; ``None`` when it is missing, or a link, or
        not to be had."""
        root = os.path.abspath(job.workspace_root)
        opened: list[int] = []
        try:
            try:
                opened.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
                for name in (CACHE_FOLDER, *([kind] if kind else []), key[:2]):
                    if create:
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, dir_fd=opened[-1])
                            if name == CACHE_FOLDER:
                                mark_cache_folder(opened[-1])
                    opened.append(os.open(name, FOLDER_FLAGS, dir_fd=opened[-1]))
                folder: int | None = opened[-1]
            except OSError:
                self._report_link(root)
                folder = None
            yield folder
        finally:
            for descriptor in reversed(opened):
                os.close(descriptor)

    def _report_link(self, root: str) -> None:
        folder = os.path.join(root, CACHE_FOLDER)
        if folder not in self._refused and os.path.islink(folder):
            self._refused.add(folder)
            logger.warning("%s is a symbolic link: fx-lsp goes without a cache there.", folder)

    def read_signed(self, job: TraceJob, key: str, kind: str | None = None) -> bytes | None:
        """The body of the entry file ``key`` (of ``kind``: ``_folder``) below the job's
        root, if it is a regular file that this user's key signed; ``None`` otherwise."""
        with self._folder(job, key, False, kind) as folder:
            if folder is None:
                return None
            data = _read_regular(key, MAX_ENTRY_BYTES, folder)
        if data is None:
            return None
        mac, _, body = data.partition(b"\n")
        expected = self._mac(body)
        if expected is None or not hmac.compare_digest(mac, expected):
            return None
        return body

    def write_signed(self, job: TraceJob, key: str, body: bytes, kind: str | None = None
                     ) -> None:
        """Store ``body``, signed, as the entry file ``key`` (of ``kind``) below the job's
        root (nothing when there is no key to sign with, the entry is too large or the
        folder is read-only)."""
        mac = self._mac(body)
        if mac is None or len(body) + len(mac) + 1 > MAX_ENTRY_BYTES:
            return
        with self._folder(job, key, True, kind) as folder:
            if folder is not None:
                with contextlib.suppress(OSError):  # a read-only workspace goes without
                    write_entry(folder, key, mac + b"\n" + body)

    def _entry(self, job: TraceJob, key: str) -> CacheEntry | None:
        """The entry stored under ``key`` (``read_signed``) if it names ``key``
        (``InvalidResultData`` when a signed body is not of the entry's shape and types)."""
        body = self.read_signed(job, key)
        if body is None:
            return None
        entry = result_codec.decode(CacheEntry, result_codec.loads(body))
        return entry if entry.key == key else None

    def seconds(self, job: TraceJob) -> float | None:
        """How long the cached trace of the job's current text took, if there is one (its
        imports are not checked: an estimate of the cost, for splitting work)."""
        try:
            key = self.key(job)
            entry = self._entry(job, key) if key is not None else None
        except Exception:  # an entry that cannot be used is no estimate
            return None
        return entry.result.seconds if entry is not None else None

    def get(self, job: TraceJob, key: str | None = None) -> FileResult | None:
        """The stored result of ``job`` if it is current; ``key``: ``self.key(job)`` when the
        caller has taken it already."""
        try:
            result = self._current(job, key if key is not None else self.key(job))
        except Exception:  # whatever goes wrong with an entry, trace again
            result = None
        if result is None:
            self.misses += 1
            return None
        self.hits += 1
        result.from_cache = True
        return result

    def _current(self, job: TraceJob, key: str | None) -> FileResult | None:
        """The stored result of the job if every file it depends on is unchanged."""
        entry = self._entry(job, key) if key is not None else None
        if entry is None:
            return None
        return entry.result if still_current(job, entry.dependencies, entry.missing_modules) \
            else None

    def put(self, job: TraceJob, result: FileResult, key: str | None = None) -> None:
        """Store ``result`` under ``key``: ``self.key(job)`` taken before the job ran (the
        pipeline does), so the entry is for the text that was traced even if the file changed
        meanwhile; by default the key of the file's text now."""
        key = key if key is not None else self.key(job)
        if key is None or any(failure.kind in _TRANSIENT_KINDS for failure in _failures(result)) \
                or any(map(is_not_reached, result.modules)):
            return
        path = os.path.abspath(job.path)
        dependencies = dict(result.imported_hashes)
        if not dependencies and not result.imported_files:
            # Not imported (no class to trace): the verdict depends on this file's text only.
            content = _content_hash(path, _absolute_overlays(job))
            dependencies = {path: content} if content is not None else {}
        if path not in dependencies or not set(result.imported_files) <= set(dependencies):
            return  # the worker could not say what it imported: nothing to vouch for it
        self.write_signed(job, key, result_codec.dumps(
            CacheEntry(key, dependencies, result.missing_modules, result)))
