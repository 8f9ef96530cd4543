"""``Database``: one SQLite file, one writer, pooled readers, commands with receipts (§2).

SQLite is the durable truth (WAL, ``synchronous=FULL``). One writer connection, guarded
by a lock, applies each command as one ``BEGIN IMMEDIATE`` transaction; readers use
their own connections, so a read never waits for the writer inside this process (and
SQLite's locks cover writers in other processes). The file carries an incarnation UUID
minted when it is created and a monotonic commit position.

A command's outcome, receipt or error, is stored in the same transaction, keyed by
``(principal, database, command_id)`` with the command's SHA-256 fingerprint, so a
retry with the same ID and bytes gets the stored outcome byte for byte, and the same ID
with other content is a ``ConflictError``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Self, TypeVar

from cairn.errors import (
    BudgetExceededError,
    CairnError,
    ConflictError,
    CorruptionError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    ValidationError,
    os_error,
)
from cairn.store.apply import apply_command, load_principal, set_position
from cairn.store.cache import Memo
from cairn.store.checksums import (
    command_checksum,
    key_checksum,
    stored_bytes,
    verify_command,
    verify_key,
)
from cairn.store.commands import (
    CommandRequest,
    CommitReceipt,
    CommitToken,
    MutationOutcome,
    decode_outcome,
    encode_error,
    encode_receipt,
    pack_outcome,
    pack_pieces,
    read_outcome,
    receipt_pieces,
    unpack_outcome,
)
from cairn.store.faults import rollback, sqlite_error
from cairn.store.keys import KeyProofs
from cairn.store.limits import (
    DATABASE_FILE_MODE,
    DEFAULT_DATABASE_NAME,
    PAGE_SIZE_BYTES,
    READER_MMAP_BYTES,
    READER_POOL_SIZE,
    SQLITE_BUSY_TIMEOUT_MS,
    TRUTH_MEMO_SIZE,
    check_identifier,
)
from cairn.store.policy import (
    OWNER,
    OWNER_PRINCIPAL_ID,
    Principal,
    check_active,
    parse_api_key,
)
from cairn.store.reads import DocumentResult, ReadCut, read_document
from cairn.store.schema import migrate, schema_version
from cairn.store.validation import check_served_database, validate_command

__all__ = [
    "STORED_ERRORS",
    "Database",
    "InternalPlan",
    "Planned",
    "PrincipalLike",
    "open",
    "open_as",
]

_Opened = TypeVar("_Opened", bound="Database")

PrincipalLike = Principal | str | None
"""A principal, its ID, or None for the embedded owner."""


class Planned(NamedTuple):
    """What an internal operation did: the command it names itself and its outcomes."""

    command_id: uuid.UUID
    fingerprint: str  # of the content applied: an equal one replays the stored receipt
    mutations: tuple[MutationOutcome, ...]


InternalPlan = Callable[[sqlite3.Connection, Principal, int], Planned]
"""An internal operation: writes at ``position`` as ``principal``; returns ``Planned``.

It names its command after its writes, so content it walks once (a load streams its
records) is fingerprinted in the same walk that applies it."""

STORED_ERRORS: tuple[type[CairnError], ...] = (
    ValidationError,
    NotFoundError,
    ConflictError,
    PermissionDeniedError,
    BudgetExceededError,
)
"""Errors that are a command's deterministic outcome and are stored for its retries."""

_FORMAT = "cairn.store/1"
_BAD_KEY = "invalid api key"
_DECOY_PRINCIPAL = "decoy"
"""The principal of the stand-in row an unknown key ID is checksummed as."""


def _translate(exc: sqlite3.Error, action: str, path: Path | None = None) -> CairnError:
    """Map a sqlite3 error to the typed Cairn error raised at the store boundary."""
    return sqlite_error(exc, action, path)


def _connect(path: Path, *, readonly: bool, aside: bool = False) -> sqlite3.Connection:
    """A connection to ``path``: a reader, or the writer (WAL, ``synchronous=FULL``);
    ``aside``: the writer of a file built aside (``cairn.store.aside``), whose journal is
    in memory and which is never synced until it is whole."""
    conn = sqlite3.connect(
        path,
        isolation_level=None,
        check_same_thread=False,
        timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if readonly:
            conn.execute("PRAGMA query_only = ON")
            # Reads map the file instead of copying pages through read(): projection
            # of random documents from a large file is ~30% faster.
            conn.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}")
        else:
            # Only takes effect while the file is still empty (before WAL and the schema).
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE_BYTES}")
            if aside:
                # Nothing else opens the file, and it is discarded unless whole: a
                # rollback journal in memory keeps ROLLBACK, and no page is written twice.
                conn.execute("PRAGMA journal_mode = MEMORY").fetchone()
                conn.execute("PRAGMA synchronous = OFF")
                return conn
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise CorruptionError(f"the database refused WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
    except BaseException:
        conn.close()
        raise
    return conn


def _create_private(file: Path) -> bool:
    """Create ``file`` empty with mode 0600 unless it exists; whether this call made it.

    The file holds key verifiers and every document, so only its owner may read it;
    SQLite gives the WAL and shared-memory files the database file's mode.
    """
    try:
        descriptor = os.open(file, os.O_RDWR | os.O_CREAT | os.O_EXCL, DATABASE_FILE_MODE)
    except FileExistsError:
        return False
    except OSError as exc:
        raise os_error(exc, "open", file) from exc
    os.close(descriptor)
    return True


def _discard(file: Path, created: bool) -> None:
    """Remove what a failed open of a new file left behind (an interrupted open leaves no
    half-made database); a file that existed before is never touched."""
    if not created:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        # Best effort: the open's own error is what the caller needs to see.
        with contextlib.suppress(OSError):
            Path(f"{file}{suffix}").unlink()


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _initialise(conn: sqlite3.Connection, name: str | None) -> dict[str, str]:
    """Mint the file's identity once (incarnation, name, position 0) and return ``meta``."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        meta = _meta(conn)
        if "incarnation" not in meta:
            meta = {
                "format": _FORMAT,
                "database": name or DEFAULT_DATABASE_NAME,
                "incarnation": str(uuid.uuid4()),
                "position": "0",
                "next_slot": "1",
            }
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", sorted(meta.items()))
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    if meta.get("format") != _FORMAT:
        raise CorruptionError(f"unknown store format {meta.get('format')!r}")
    if name is not None and meta["database"] != name:
        raise ConflictError(
            f"the file holds database {meta['database']!r}, not {name!r}",
            details={"database": meta["database"]},
        )
    return meta


def open(path: str | os.PathLike[str], *, database: str | None = None) -> Database:
    """Open (creating and migrating as needed) the Cairn database in the file ``path``.

    ``database`` names the database when the file is created (default ``main``); when
    given for an existing file it must match the stored name. This is the store alone
    (commands and reads); ``cairn.open`` adds search.
    """
    return open_as(Database, path, database=database)


def open_as(
    kind: type[_Opened],
    path: str | os.PathLike[str],
    *,
    database: str | None = None,
    aside: bool = False,
) -> _Opened:
    """``open``, handing the file to ``kind`` (a ``Database`` subclass a layer above adds
    to). ``aside``: the file is being built aside (only ``cairn.store.aside`` says so)."""
    file = Path(path)
    if str(path) in ("", ":memory:") or str(path).startswith("file:"):
        raise ValidationError("a Cairn database needs a file path (WAL needs a real file)")
    if database is not None:
        check_identifier(database, "database")
    if not file.parent.is_dir():
        raise NotFoundError(f"directory {str(file.parent)!r} does not exist")
    created = _create_private(file)
    try:
        writer = _connect(file, readonly=False, aside=aside)
    except sqlite3.Error as exc:
        _discard(file, created)
        raise _translate(exc, "open", file) from exc
    except BaseException:
        _discard(file, created)
        raise
    try:
        migrate(writer)
        meta = _initialise(writer, database)
    except sqlite3.Error as exc:
        writer.close()
        _discard(file, created)
        raise _translate(exc, "open", file) from exc
    except BaseException:
        writer.close()
        _discard(file, created)
        raise
    return kind(file, writer, meta["database"], uuid.UUID(meta["incarnation"]))


def stored_command(
    conn: sqlite3.Connection, principal: str, database: str, command_id: str
) -> tuple[str, bool, bytes] | None:
    """``(fingerprint, ok, stored outcome bytes)`` of a command, verified against the
    row's checksum (``CorruptionError`` naming the command if damaged), or None."""
    row = conn.execute(
        "SELECT fingerprint, ok, position, outcome, checksum FROM commands "
        "WHERE principal = ? AND database = ? AND command_id = ?",
        (principal, database, command_id),
    ).fetchone()
    if row is None:
        return None
    fingerprint, ok, position, outcome, checksum = row
    data = stored_bytes(outcome) or b""
    verify_command(principal, database, command_id, fingerprint, ok, position, data, checksum)
    return str(fingerprint), bool(ok), data


class Database:
    """An open Cairn database file: commands, principals and reads under one name."""

    def __init__(
        self, path: Path, writer: sqlite3.Connection, name: str, incarnation: uuid.UUID
    ) -> None:
        self._path = path
        self._writer = writer
        self._name = name
        self._incarnation = incarnation
        self._write_lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._idle_readers: list[sqlite3.Connection] = []
        self._closed = False
        self._memo = Memo(TRUTH_MEMO_SIZE)
        self._cut_lock = threading.Lock()
        self._read_cut_acquisitions = 0
        self._keys = KeyProofs()

    # --------------------------------------------------------------- identity
    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    @property
    def name(self) -> str:
        """The database name commands must target."""
        return self._name

    @property
    def incarnation(self) -> uuid.UUID:
        """The UUID minted when the file was created."""
        return self._incarnation

    @property
    def position(self) -> int:
        """The latest commit position (0 before the first command)."""
        with self._reader() as conn:
            return int(_meta(conn)["position"])

    @property
    def schema_version(self) -> int:
        """The schema version of the file (always the latest once open)."""
        with self._reader() as conn:
            return schema_version(conn)

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Close every connection; the object is unusable afterwards."""
        with self._write_lock, self._pool_lock:
            if self._closed:
                return
            self._closed = True
            for conn in self._idle_readers:
                conn.close()
            self._idle_readers.clear()
            self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValidationError("the database is closed")

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        """A reader connection from the pool (returned to it afterwards)."""
        with self._pool_lock:
            self._check_open()
            conn = self._idle_readers.pop() if self._idle_readers else None
        try:
            if conn is None:
                conn = _connect(self._path, readonly=True)
            yield conn
        except sqlite3.Error as exc:
            raise _translate(exc, "read", self._path) from exc
        finally:
            if conn is not None:
                rollback(conn)
                with self._pool_lock:
                    if self._closed or len(self._idle_readers) >= READER_POOL_SIZE:
                        conn.close()
                    else:
                        self._idle_readers.append(conn)

    # ------------------------------------------------------------- principals
    @staticmethod
    def _principal_id(principal: PrincipalLike) -> str:
        if principal is None:
            return OWNER_PRINCIPAL_ID
        if isinstance(principal, Principal):
            return principal.id
        return principal

    def _resolve(
        self, conn: sqlite3.Connection, principal: PrincipalLike, now: datetime
    ) -> Principal:
        """Load the principal afresh from ``conn``; unknown, revoked or expired is refused."""
        principal_id = self._principal_id(principal)
        if principal_id == OWNER_PRINCIPAL_ID:
            return OWNER
        found = load_principal(conn, principal_id)
        if found is None:
            raise UnauthenticatedError(
                f"unknown principal {principal_id!r}", details={"principal": principal_id}
            )
        check_active(found, now)
        return found

    def principal(
        self, principal: PrincipalLike = None, *, now: datetime | None = None
    ) -> Principal:
        """The current record of a principal (``UnauthenticatedError`` if not active)."""
        moment = now or datetime.now(UTC)
        with self._reader() as conn:
            return self._resolve(conn, principal, moment)

    def authenticate(self, api_key: str, *, now: datetime | None = None) -> Principal:
        """The active principal an API key belongs to; every failure is ``Unauthenticated``."""
        moment = now or datetime.now(UTC)
        key_id, secret = parse_api_key(api_key)
        with self._reader() as conn:
            # The row of the key ID or, for an unknown one, of the next key ID: a lookup
            # that finds a row either way, so its cost does not tell whether the ID exists.
            near = conn.execute(
                "SELECT key_id, principal, verifier, checksum FROM api_keys "
                "WHERE key_id >= ? ORDER BY key_id LIMIT 1",
                (key_id,),
            ).fetchone()
            row = near[1:] if near is not None and near[0] == key_id else None
            if row is not None:
                verify_key(key_id, row[0], row[1], row[2])  # a damaged verifier is named
            elif near is not None:  # the same checksum work, about a key not asked for
                key_checksum(near[0], near[1], near[2])
            else:
                key_checksum(key_id, _DECOY_PRINCIPAL, self._keys.decoy_verifier)
            if row is None or not self._keys.check(key_id, secret, row[1]):
                if row is None:
                    self._keys.check(key_id, secret, None)  # the decoy's work all the same
                raise UnauthenticatedError(_BAD_KEY)
            return self._resolve(conn, row[0], moment)

    # -------------------------------------------------------------- read cuts
    @property
    def read_cut_acquisitions(self) -> int:
        """How many read cuts this handle has acquired (tests count one per request)."""
        with self._cut_lock:
            return self._read_cut_acquisitions

    @contextmanager
    def _pinned(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A reader in one SQLite read transaction and the position it pinned."""
        with self._reader() as conn:
            conn.execute("BEGIN")
            yield conn, int(_meta(conn)["position"])  # the first read pins the snapshot

    @contextmanager
    def read_cut(
        self, principal: PrincipalLike = None, *, now: datetime | None = None
    ) -> Iterator[ReadCut]:
        """Pin one read: a SQLite read transaction at position P, the principal inside it.

        The principal is resolved afresh inside the same transaction. A layer above
        (``cairn.index``) extends the cut with whatever it derives at P.
        """
        moment = now or datetime.now(UTC)
        with self._pinned() as (conn, position):
            actor = self._resolve(conn, principal, moment)
            with self._cut_lock:
                self._read_cut_acquisitions += 1
            yield ReadCut(conn, self._name, position, actor, self._memo)

    def _write_derived(self, write: Callable[[sqlite3.Connection], None], action: str) -> None:
        """Run ``write(conn)`` in one write transaction that leaves the position alone.

        For derived data a layer above keeps in the file beside the truth (the column
        snapshot): no command, no receipt, no change a reader must see.
        """
        with self._write_lock:
            self._check_open()
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                write(conn)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                rollback(conn)
                raise _translate(exc, action, self._path) from exc
            except BaseException:
                rollback(conn)
                raise

    def checkpoint_wal(self) -> None:
        """Copy the write-ahead log's committed pages into the file (SQLite's passive
        checkpoint): what closing the last connection does, for a process that keeps
        its handle open between writes (``cairn watch``) to run while idle. Commits are
        durable without it (each is synced to the log); readers are not waited for."""
        with self._write_lock:
            self._check_open()
            try:
                self._writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:
                raise _translate(exc, "checkpoint", self._path) from exc

    def vacuum(self) -> None:
        """Rewrite the file without free space (SQLite ``VACUUM``); no data or position changes.

        A first bulk load leaves B-tree pages partly filled (about 7% of a code index's
        file); rewriting packs them. Readers keep their read cuts: the rewrite is one
        write transaction like any other.
        """
        with self._write_lock:
            self._check_open()
            try:
                self._writer.execute("VACUUM")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise _translate(exc, "vacuum", self._path) from exc

    def get_document(
        self,
        collection: str,
        doc_id: str,
        principal: PrincipalLike = None,
        *,
        now: datetime | None = None,
    ) -> DocumentResult:
        """One live document as ``principal`` may see it (hidden or deleted: NotFound)."""
        with self.read_cut(principal, now=now) as cut:
            return read_document(cut, collection, doc_id)

    # --------------------------------------------------------------- commands
    def command(
        self,
        request: CommandRequest,
        principal: PrincipalLike = None,
        *,
        now: datetime | None = None,
    ) -> CommitReceipt:
        """Apply ``request`` atomically as ``principal`` and return its receipt.

        ``now`` is the moment the principal's expiry is judged at (the wall clock when
        omitted); it is read here, at the boundary, never inside apply.
        """
        if not isinstance(request, CommandRequest):
            raise ValidationError("command() takes a CommandRequest")
        check_served_database(request.database, self._name)
        data = request.canonical_bytes()
        fingerprint = request.fingerprint()
        moment = now or datetime.now(UTC)
        with self._write_lock:
            self._check_open()
            try:
                outcome = self._command(request, len(data), fingerprint, principal, moment)
            except sqlite3.Error as exc:
                rollback(self._writer)
                raise _translate(exc, "command", self._path) from exc
        if isinstance(outcome, CairnError):
            raise outcome
        return outcome

    def _command(
        self,
        request: CommandRequest,
        size: int,
        fingerprint: str,
        principal: PrincipalLike,
        now: datetime,
    ) -> CommitReceipt | CairnError:
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            actor = self._resolve(conn, principal, now)
            stored = stored_command(conn, actor.id, request.database, str(request.command_id))
            if stored is not None:
                conn.execute("ROLLBACK")
                return self._replay(request, fingerprint, stored[0], stored[2])
            return self._apply(conn, request, size, fingerprint, actor)
        except BaseException:
            rollback(conn)
            raise

    @staticmethod
    def _replay(
        request: CommandRequest, fingerprint: str, stored_fingerprint: str, outcome: bytes
    ) -> CommitReceipt | CairnError:
        if stored_fingerprint != fingerprint:
            raise ConflictError(
                f"command {request.command_id} was already used with other content",
                details={"command_id": str(request.command_id)},
            )
        return read_outcome(outcome, str(request.command_id))

    def _apply(
        self,
        conn: sqlite3.Connection,
        request: CommandRequest,
        size: int,
        fingerprint: str,
        actor: Principal,
    ) -> CommitReceipt | CairnError:
        last = int(_meta(conn)["position"])
        position = last + 1
        conn.execute("SAVEPOINT apply")
        try:
            validate_command(request, size)
            outcomes = apply_command(conn, request, actor, position)
        except STORED_ERRORS as exc:
            conn.execute("ROLLBACK TO apply")
            conn.execute("RELEASE apply")
            self._store_outcome(conn, request, actor, fingerprint, False, encode_error(exc), last)
            conn.execute("COMMIT")
            # Raise exactly what a retry will raise: the decoded stored problem.
            return decode_outcome({"ok": False, "error": exc.to_problem()})
        token = CommitToken(self._incarnation, self._name, position)
        receipt = CommitReceipt(request.command_id, token, outcomes)
        conn.execute("RELEASE apply")
        self._store_outcome(
            conn, request, actor, fingerprint, True, encode_receipt(receipt), position
        )
        conn.execute("COMMIT")
        return receipt

    @staticmethod
    def _store_outcome(
        conn: sqlite3.Connection,
        request: CommandRequest,
        actor: Principal,
        fingerprint: str,
        ok: bool,
        outcome: bytes,
        position: int,
    ) -> None:
        packed = pack_outcome(outcome)
        key = (actor.id, request.database, str(request.command_id))
        conn.execute(
            "INSERT INTO commands (principal, database, command_id, fingerprint, ok, outcome, "
            "position, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *key,
                fingerprint,
                int(ok),
                packed,
                position,
                command_checksum(*key, fingerprint, int(ok), position, packed),
            ),
        )

    def apply_internal(
        self,
        plan: InternalPlan,
        principal: PrincipalLike = None,
        *,
        now: datetime | None = None,
    ) -> CommitReceipt:
        """Run an internal admin operation (a bulk load) as one transaction with a receipt.

        ``plan(conn, principal, position)`` applies its writes through an ``Applier`` at
        the next position and returns their outcomes with the command ID and fingerprint
        it names them by (``Planned``). When it changes nothing, nothing is committed
        and the position does not move: the stored outcome of that command ID is
        returned if its fingerprint matches (byte-identical replay),
        else an empty receipt at the current position. Otherwise the writes, the new
        position and the outcome (replacing an older one of the same ID: an internal
        ID names content, and re-applying content after other changes is legitimate)
        commit together. Errors roll everything back and are not stored.
        """
        moment = now or datetime.now(UTC)
        with self._write_lock:
            self._check_open()
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                actor = self._resolve(conn, principal, moment)
                last = int(_meta(conn)["position"])
                command_id, fingerprint, outcomes = plan(conn, actor, last + 1)
                if not outcomes:
                    stored = stored_command(conn, actor.id, self._name, str(command_id))
                    conn.execute("ROLLBACK")
                    if stored is not None and stored[1] and stored[0] == fingerprint:
                        replayed = read_outcome(stored[2], str(command_id))
                        if not isinstance(replayed, CommitReceipt):
                            raise CorruptionError(
                                f"the stored outcome of internal command {command_id} is "
                                "an error; internal commands store only receipts",
                                details={"table": "commands", "command_id": str(command_id)},
                            )
                        return replayed
                    token = CommitToken(self._incarnation, self._name, last)
                    return CommitReceipt(command_id, token, ())
                set_position(conn, last + 1)
                token = CommitToken(self._incarnation, self._name, last + 1)
                receipt = CommitReceipt(command_id, token, outcomes)
                packed = pack_pieces(receipt_pieces(receipt))
                key = (actor.id, self._name, str(command_id))
                conn.execute(
                    "INSERT OR REPLACE INTO commands (principal, database, command_id, "
                    "fingerprint, ok, outcome, position, checksum) VALUES (?, ?, ?, ?, 1, ?, ?, ?)",
                    (
                        *key,
                        fingerprint,
                        packed,
                        last + 1,
                        command_checksum(*key, fingerprint, 1, last + 1, packed),
                    ),
                )
                conn.execute("COMMIT")
                return receipt
            except sqlite3.Error as exc:
                rollback(conn)
                raise _translate(exc, "internal command", self._path) from exc
            except BaseException:
                rollback(conn)
                raise

    def stored_outcome(
        self, command_id: uuid.UUID, principal: PrincipalLike = None
    ) -> bytes | None:
        """The stored outcome bytes of a command (receipt or problem JSON), or None."""
        with self._reader() as conn:
            row = stored_command(conn, self._principal_id(principal), self._name, str(command_id))
        return None if row is None else unpack_outcome(row[2])
