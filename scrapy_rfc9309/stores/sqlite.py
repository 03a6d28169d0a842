"""``ROBOTS_STORE = "sqlite"``: outcomes in a SQLite file.

The file outlives the crawl, so a crawl resumed with the same ``JOBDIR``
does not fetch robots.txt again while the stored outcomes are fresh, and
several processes on one machine may share it: the database runs in WAL
mode with a busy timeout, and the fetch lease is a row whose expiry is
checked and taken in one statement.  Crawl-delay turns are rows too, taken
in one ``BEGIN IMMEDIATE`` transaction by this host's clock; a turn's row
means nothing once its moment has passed and is purged with expired rows.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from scrapy.utils.job import job_dir
from scrapy.utils.project import data_path

from .._compat import is_asyncio_available, run_in_thread
from .._config import RobotsConfig
from .._defaults import DEFAULTS
from .._redact import masked
from .._settings import SettingError
from ._codec import decode, encode, oversized
from .base import HELD_MAX, OutcomeStore, StoreError, turn_discarded

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from ..outcome import Outcome

_T = TypeVar("_T")

#: File name of the store inside ``JOBDIR`` or the project data directory.
FILE_NAME = "robots.sqlite3"

#: Bumped when the tables change; a file from a newer version is refused.
SCHEMA_VERSION = 1

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS outcomes ("
    " origin TEXT PRIMARY KEY, outcome TEXT NOT NULL, retain_until REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS outcomes_retain_until ON outcomes (retain_until)",
    "CREATE TABLE IF NOT EXISTS leases ("
    " origin TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL)",
    # Crawl-delay turns: when the next request to the origin may start.  A
    # table added to schema 1 (older versions never read it).
    "CREATE TABLE IF NOT EXISTS turns ("
    " origin TEXT PRIMARY KEY, next_free REAL NOT NULL)",
    # Records kept beside outcomes (TDMRep files), added to schema 1 too.
    "CREATE TABLE IF NOT EXISTS records ("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL, retain_until REAL NOT NULL)",
    # Retry-After pauses of the fleet: when each ends.  Added to schema 1.
    "CREATE TABLE IF NOT EXISTS holds ("
    " origin TEXT PRIMARY KEY, ends_at REAL NOT NULL)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)

# Expired rows are deleted when the file is opened and then every this many
# writes, so a long crawl over many origins keeps the file bounded without
# a purge on each write.
_PURGE_EVERY = 1000


def sqlite_path(crawler: Crawler) -> Path:
    """Where the store of this crawl lives.

    ``ROBOTS_STORE_URL`` as a path or a ``sqlite:///path`` URL (relative;
    ``sqlite:////abs/path`` for an absolute path), else ``robots.sqlite3``
    inside ``JOBDIR`` when it is set, else inside the project data directory
    (``.scrapy/``).
    """
    url = RobotsConfig.for_crawler(crawler).store_url
    if url:
        if url.startswith("sqlite:///"):
            return Path(url[len("sqlite:///") :]).expanduser()
        if "://" in url:
            raise SettingError(
                f"ROBOTS_STORE_URL={masked(url)!r} is not a SQLite path: give a"
                " file path or a sqlite:///path URL with ROBOTS_STORE='sqlite'"
            )
        return Path(url).expanduser()
    jobdir = job_dir(crawler.settings)
    if jobdir:
        return Path(jobdir, FILE_NAME)
    return Path(data_path(FILE_NAME))


class SQLiteStore(OutcomeStore):
    """Outcomes in a SQLite file, shared by the processes that open it.

    Every database call runs on one thread of the store's own, so the event
    loop never waits on the disk or on another process's lock.  The file is
    opened on first use; any failure of SQLite or of the file system raises
    :class:`StoreError`.  An entry larger than ``max_entry_bytes`` is not
    written (and the origin's older row deleted): that outcome stays in the
    memory of the process that fetched it.
    """

    shared = True
    #: Seconds since the epoch: what retain_until and lease expiries are
    #: compared with; tests replace it.
    clock: Callable[[], float] = staticmethod(time.time)

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 5.0,
        max_entry_bytes: int = DEFAULTS["ROBOTS_STORE_MAX_ENTRY_BYTES"],
        crawler: Crawler | None = None,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.max_entry_bytes = max_entry_bytes
        self._crawler = crawler
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="robots-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        # Calls that failed so far (changed on the store's thread only).
        self._failures = 0
        self._writes = 0
        # The token of each lease this store holds, so that releasing a lease
        # that expired and was taken by another process deletes nothing.
        self._tokens: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(
            sqlite_path(crawler),
            max_entry_bytes=RobotsConfig.for_crawler(crawler).store_max_entry_bytes,
            crawler=crawler,
        )

    async def get(self, origin: str) -> Outcome | None:
        data = await self._run(self._get, origin)
        return None if data is None else decode(data, origin, self._crawler)

    async def put(self, origin: str, outcome: Outcome) -> None:
        data = encode(outcome)
        if len(data) > self.max_entry_bytes:
            oversized(self._crawler, origin, len(data), self.max_entry_bytes)
            # The older row is deleted: an entry must not outlive its successor.
            await self._run(self._put, origin, b"", -math.inf)
            return
        await self._run(self._put, origin, data, outcome.retain_until)

    async def get_record(self, key: str) -> str | None:
        data = await self._run(self._get_record, key)
        return None if data is None else data.decode("utf-8", "replace")

    async def put_record(self, key: str, value: str, retain_until: float) -> None:
        await self._run(self._put_record, key, value, retain_until)

    async def acquire(self, origin: str, ttl: float) -> bool:
        token = uuid.uuid4().hex
        if not await self._run(self._acquire, origin, token, ttl):
            return False
        self._tokens[origin] = token
        return True

    async def release(self, origin: str) -> None:
        token = self._tokens.pop(origin, None)
        if token is not None:
            await self._run(self._release, origin, token)

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        most = interval if limit is None else max(interval, limit)
        wait, discarded = await self._run(self._reserve, origin, interval, most)
        if discarded:
            turn_discarded(self._crawler, origin, discarded)
        return wait

    async def hold(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        most = seconds if limit is None else max(seconds, limit)
        discarded = await self._run(self._hold, origin, seconds, most)
        if discarded:
            turn_discarded(self._crawler, origin, discarded)

    async def extend(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        most = seconds if limit is None else max(seconds, limit)
        discarded = await self._run(self._extend, origin, seconds, most)
        if discarded:
            turn_discarded(self._crawler, origin, discarded)

    async def held(self, limit: float | None = None) -> dict[str, float]:
        running, discarded = await self._run(
            self._held, math.inf if limit is None else limit
        )
        for origin, ahead in discarded:
            turn_discarded(self._crawler, origin, ahead)
        return running

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._run(self._close)
        finally:
            self._executor.shutdown(wait=False)

    async def _run(self, func: Callable[..., _T], *args: object) -> _T:
        future = self._executor.submit(self._guarded, self._failures, func, *args)
        if is_asyncio_available():
            return await asyncio.wrap_future(future)
        # Under a reactor without asyncio the future cannot be awaited;
        # a reactor thread waits for the store's thread instead.
        return await run_in_thread(future.result)

    def _guarded(self, failures: int, func: Callable[..., _T], *args: object) -> _T:
        # A call queued before another failed fails at once: behind a locked
        # file each would wait out the busy timeout in turn, one after the
        # other on this one thread (a crawl stops using a store that failed).
        if failures != self._failures and func != self._close:
            raise StoreError(f"SQLite store {self.path}: a call before this one failed")
        try:
            return func(*args)
        except (sqlite3.Error, OSError) as exc:
            self._failures += 1
            raise StoreError(f"SQLite store {self.path}: {exc}") from exc

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._connect()
        return self._connection

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every statement below is a transaction of its own,
        # which is all the atomicity the store needs.
        connection = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None
        )
        # Text comes back undecoded: an entry that is not UTF-8 is then a
        # decoding failure of that entry, not an error of the store.
        connection.text_factory = bytes
        # Processes opening a new file at once race to switch it to WAL and
        # create the tables; SQLite may answer "database is locked" there
        # without waiting for its busy timeout, so the set-up is retried
        # until that timeout has passed.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                self._set_up(connection)
            except sqlite3.OperationalError as exc:  # noqa: PERF203 - a retry
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    connection.close()
                    raise
                time.sleep(0.02)
            except BaseException:
                connection.close()
                raise
            else:
                return connection

    def _set_up(self, connection: sqlite3.Connection) -> None:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"SQLite store {self.path}: written by a newer version of "
                f"scrapy-rfc9309 (schema {version}, this one reads "
                f"{SCHEMA_VERSION})"
            )
        connection.execute("PRAGMA journal_mode = WAL")
        # WAL makes NORMAL safe against corruption; a power cut may lose
        # the last outcomes, which are then fetched again.
        connection.execute("PRAGMA synchronous = NORMAL")
        for statement in _SCHEMA:
            connection.execute(statement)
        self._purge(connection)

    def _purge(self, connection: sqlite3.Connection) -> None:
        now = self.clock()
        connection.execute("DELETE FROM outcomes WHERE retain_until <= ?", (now,))
        connection.execute("DELETE FROM leases WHERE expires_at <= ?", (now,))
        connection.execute("DELETE FROM turns WHERE next_free <= ?", (now,))
        connection.execute("DELETE FROM records WHERE retain_until <= ?", (now,))
        connection.execute("DELETE FROM holds WHERE ends_at <= ?", (time.time(),))

    def _wrote(self, db: sqlite3.Connection) -> None:
        """Count a write; every :data:`_PURGE_EVERY` writes, purge."""
        self._writes += 1
        if self._writes % _PURGE_EVERY == 0:
            self._purge(db)

    def _get(self, origin: str) -> bytes | None:
        row = (
            self._db()
            .execute(
                "SELECT outcome FROM outcomes WHERE origin = ? AND retain_until > ?",
                (origin, self.clock()),
            )
            .fetchone()
        )
        if row is None:
            return None
        # A value of another type, put there by hand, still decodes (to
        # nothing) instead of failing the lookup.
        value = row[0]
        return value if isinstance(value, bytes) else str(value).encode()

    def _put(self, origin: str, data: bytes, retain_until: float) -> None:
        db = self._db()
        if retain_until <= self.clock():
            # Nothing to keep (or too large to): an older entry must not
            # outlive its successor.
            db.execute("DELETE FROM outcomes WHERE origin = ?", (origin,))
            return
        db.execute(
            "INSERT OR REPLACE INTO outcomes (origin, outcome, retain_until)"
            " VALUES (?, ?, ?)",
            (origin, data, retain_until),
        )
        self._wrote(db)

    def _get_record(self, key: str) -> bytes | None:
        row = (
            self._db()
            .execute(
                "SELECT value FROM records WHERE key = ? AND retain_until > ?",
                (key, self.clock()),
            )
            .fetchone()
        )
        if row is None:
            return None
        value = row[0]
        return value if isinstance(value, bytes) else str(value).encode()

    def _put_record(self, key: str, value: str, retain_until: float) -> None:
        db = self._db()
        if retain_until <= self.clock():
            db.execute("DELETE FROM records WHERE key = ?", (key,))
            return
        db.execute(
            "INSERT OR REPLACE INTO records (key, value, retain_until)"
            " VALUES (?, ?, ?)",
            (key, value, retain_until),
        )
        self._wrote(db)

    def _acquire(self, origin: str, token: str, ttl: float) -> bool:
        now = self.clock()
        # One statement takes a free or expired lease and leaves a live one
        # alone, so two processes can never both see themselves as holder.
        cursor = self._db().execute(
            "INSERT INTO leases (origin, token, expires_at) VALUES (?, ?, ?)"
            " ON CONFLICT (origin) DO UPDATE"
            " SET token = excluded.token, expires_at = excluded.expires_at"
            " WHERE leases.expires_at <= ?",
            (origin, token, now + ttl, now),
        )
        return cursor.rowcount == 1

    def _release(self, origin: str, token: str) -> None:
        self._db().execute(
            "DELETE FROM leases WHERE origin = ? AND token = ?", (origin, token)
        )

    def _reserve(
        self, origin: str, interval: float, limit: float
    ) -> tuple[float, float]:
        """The wait (0.0: taken) and how far ahead a discarded turn was."""
        db = self._db()
        # The write lock is taken before the read, so no other process takes
        # the same turn between the SELECT and the write.  The processes
        # share this host's clock.
        with _immediate(db):
            now = time.time()
            row = db.execute(
                "SELECT next_free FROM turns WHERE origin = ?", (origin,)
            ).fetchone()
            ahead = _ahead(row, now)
            if 0 < ahead <= limit:
                return ahead, 0.0
            db.execute(
                "INSERT OR REPLACE INTO turns (origin, next_free) VALUES (?, ?)",
                (origin, now + interval),
            )
        self._wrote(db)
        return 0.0, ahead if ahead > limit else 0.0

    def _hold(self, origin: str, seconds: float, limit: float) -> float:
        """Pause ``origin`` (see :meth:`hold`); how far ahead a discarded
        turn was."""
        db = self._db()
        with _immediate(db):
            now = time.time()
            ahead = _push_turn(db, origin, seconds, now, limit)
            row = db.execute(
                "SELECT ends_at FROM holds WHERE origin = ?", (origin,)
            ).fetchone()
            listed = _ahead(row, now)
            if row is None or listed < seconds or listed > limit:
                db.execute(
                    "INSERT OR REPLACE INTO holds (origin, ends_at) VALUES (?, ?)",
                    (origin, now + seconds),
                )
        self._wrote(db)
        return ahead if ahead > limit else 0.0

    def _extend(self, origin: str, seconds: float, limit: float) -> float:
        """Move the turn of ``origin`` to at least ``seconds`` from now (see
        :meth:`extend`); how far ahead a discarded turn was."""
        db = self._db()
        with _immediate(db):
            ahead = _push_turn(db, origin, seconds, time.time(), limit)
        self._wrote(db)
        return ahead if ahead > limit else 0.0

    def _held(self, limit: float) -> tuple[dict[str, float], list[tuple[str, float]]]:
        """The pauses running (origin -> seconds left) and those discarded
        (origin, how far ahead)."""
        db = self._db()
        now = time.time()
        rows = db.execute(
            "SELECT rowid, origin, ends_at FROM holds WHERE ends_at > ? LIMIT ?",
            (now, HELD_MAX),
        ).fetchall()
        running: dict[str, float] = {}
        discarded: list[tuple[str, float]] = []
        poisoned: list[tuple[int]] = []
        for rowid, name, ends_at in rows:
            origin = (
                name.decode("utf-8", "replace")
                if isinstance(name, bytes)
                else str(name)
            )
            ahead = _ahead((ends_at,), now)
            if ahead > limit:
                discarded.append((origin, ahead))
                poisoned.append((rowid,))
            else:
                running[origin] = ahead
        if poisoned:
            db.executemany("DELETE FROM holds WHERE rowid = ?", poisoned)
        return running, discarded

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _ahead(row: tuple[object, ...] | None, now: float) -> float:
    """How far ahead of ``now`` a stored turn's moment is (infinite when it
    is not a number)."""
    if row is None:
        return 0.0
    value = row[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.inf
    if not math.isfinite(value):
        return math.inf
    return float(value) - now


def _push_turn(
    db: sqlite3.Connection, origin: str, seconds: float, now: float, limit: float
) -> float:
    """Move the turn of ``origin`` to ``seconds`` after ``now`` unless it is
    later already (and no further than ``limit`` ahead: beyond, it is
    replaced); how far ahead of ``now`` the stored turn was."""
    ahead = _ahead(
        db.execute(
            "SELECT next_free FROM turns WHERE origin = ?", (origin,)
        ).fetchone(),
        now,
    )
    if ahead < seconds or ahead > limit:
        db.execute(
            "INSERT OR REPLACE INTO turns (origin, next_free) VALUES (?, ?)",
            (origin, now + seconds),
        )
    return ahead


@contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: the write lock is taken before
    the first read, committed at the end, rolled back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
