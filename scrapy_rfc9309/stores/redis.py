"""``ROBOTS_STORE = "redis"``: outcomes in Redis, shared by a fleet of workers.

Workers of one crawl (the scrapy-redis way: one Redis, many workers) then
fetch each origin's robots.txt once between them.  Entries expire by Redis
TTL at the outcome's ``retain_until``; the fetch lease is a key set with
``NX`` and a TTL, holding a random token, and is released by a script that
deletes it only while it still holds that token, so a worker whose lease
expired and was taken over cannot release its successor's lease.  Crawl-delay
turns are taken by a script too, by Redis's clock (see ``_RESERVE``).

Needs redis-py (the package's ``redis`` extra, or ``pip install
"redis>=5.0.1"``) and an asyncio event loop: the asyncio reactor (Scrapy's
default) or reactor-less mode.
"""

from __future__ import annotations

import math
import time
import uuid
from typing import TYPE_CHECKING, TypeVar

try:
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - depends on the environment
    # The version is the redis extra's (setup.cfg): the package is installed
    # from a checkout, where "scrapy-rfc9309[redis]" names nothing to pip.
    raise ImportError(
        "ROBOTS_STORE='redis' needs redis-py, the package's redis extra:"
        ' pip install "redis>=5.0.1"'
    ) from exc

from .._compat import is_asyncio_available
from .._config import RobotsConfig
from .._defaults import DEFAULTS
from .._redact import ambiguous, masked, redacted
from .._settings import SettingError, text
from ._codec import decode, encode, oversized
from .base import HELD_MAX, OutcomeStore, StoreError, turn_discarded

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

    from ..outcome import Outcome

_T = TypeVar("_T")

#: How far ahead :meth:`RedisStore.held` trusts a pause without a limit
#: (microseconds): any distance.
_NO_LIMIT = 10**15

DEFAULT_PREFIX: str = DEFAULTS["ROBOTS_STORE_PREFIX"]
DEFAULT_MAX_ENTRY_BYTES: int = DEFAULTS["ROBOTS_STORE_MAX_ENTRY_BYTES"]

# Delete the lease only while it holds our token, in one step on the server.
_RELEASE = """
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0
"""

# Try to take the Crawl-delay turn of an origin (KEYS[1]) in one step on the
# server, by Redis's own clock (TIME, in microseconds), so the workers'
# clocks never matter.  The stored value is the moment the origin is free
# again.  Free now: the turn is taken, the next free moment set ARGV[1]
# microseconds on, the key expiring then; else the wait is returned and
# nothing changes.  A stored moment more than ARGV[2] microseconds ahead (no
# honest worker writes one) is discarded: its distance is returned second,
# capped so that it stays an integer reply.
# %.0f keeps every digit (Lua's tostring gives 14 significant digits).
# A key another program gave another type (a list, a hash) reads as an
# empty string: not a value of ours, and no WRONGTYPE error that would take
# the whole store down.  For GET, and the turn scripts' first lines.
_STRING = """
local kind = redis.call("TYPE", KEYS[1]).ok
if kind == "none" then
    return false
elseif kind ~= "string" then
    return ""
end
return redis.call("GET", KEYS[1])
"""
_TURN_TYPE = """
local kind = redis.call("TYPE", KEYS[1]).ok
if kind ~= "string" and kind ~= "none" then
    redis.call("DEL", KEYS[1])
end
"""

_RESERVE = (
    _TURN_TYPE
    + """
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local stored = tonumber(redis.call("GET", KEYS[1]))
local discarded = 0
if stored and stored - now > tonumber(ARGV[2]) then
    discarded = math.min(stored - now, 1e15)
elseif stored and stored > now then
    return {stored - now, 0}
end
redis.call("SET", KEYS[1], string.format("%.0f", now + interval),
           "PX", math.ceil(interval / 1000))
return {0, discarded}
"""
)

# Move the turn of an origin (KEYS[1]) to at least ARGV[1] microseconds from
# now, by Redis's clock, never earlier.  A stored moment more than ARGV[2]
# microseconds ahead is discarded and replaced (its distance kept in
# ``discarded``).  The start of _EXTEND and _HOLD, each one step.
_PUSH_TURN = (
    _TURN_TYPE
    + """
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local finish = now + tonumber(ARGV[1])
local most = tonumber(ARGV[2])
local stored = tonumber(redis.call("GET", KEYS[1]))
local discarded = 0
if stored and stored - now > most then
    discarded = math.min(stored - now, 1e15)
    stored = nil
end
local ms = math.ceil((finish - now) / 1000)
if not stored or stored < finish then
    redis.call("SET", KEYS[1], string.format("%.0f", finish), "PX", ms)
end
"""
)

# The end of a fetch: the next turn a Crawl-delay after it.  Nothing is
# listed (unlike _HOLD).
_EXTEND = _PUSH_TURN + "return discarded\n"

# Pause an origin (KEYS[1] its turn, KEYS[2] the sorted set of pauses, scored
# by when each ends; ARGV[3] the origin) for ARGV[1] microseconds: the turn
# is pushed as by _EXTEND, and the origin listed until the pause ends.  The
# set expires when its last pause ends.
_HOLD = (
    _PUSH_TURN
    + """
local kind = redis.call("TYPE", KEYS[2]).ok
if kind ~= "zset" and kind ~= "none" then
    redis.call("DEL", KEYS[2])
end
local listed = tonumber(redis.call("ZSCORE", KEYS[2], ARGV[3]))
if not listed or listed < finish or listed - now > most then
    redis.call("ZADD", KEYS[2], string.format("%.0f", finish), ARGV[3])
end
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
if redis.call("PTTL", KEYS[2]) < ms then
    redis.call("PEXPIRE", KEYS[2], ms)
end
return discarded
"""
)

# The pauses (KEYS[1]) running now, at most ARGV[2]: origin, microseconds
# left, ...; those more than ARGV[1] microseconds ahead are removed and
# answered apart (origin, distance, ...); the ended ones are removed.
_HELD = """
if redis.call("TYPE", KEYS[1]).ok ~= "zset" then
    return {{}, {}}
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local bound = string.format("%.0f", now + tonumber(ARGV[1]))
local far = redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. bound, "+inf",
                       "WITHSCORES", "LIMIT", 0, ARGV[2])
local discarded = {}
for i = 1, #far, 2 do
    redis.call("ZREM", KEYS[1], far[i])
    discarded[#discarded + 1] = far[i]
    discarded[#discarded + 1] = string.format("%.0f", math.min(far[i + 1] - now, 1e15))
end
local items = redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. string.format("%.0f", now),
                         bound, "WITHSCORES", "LIMIT", 0, ARGV[2])
local running = {}
for i = 1, #items, 2 do
    running[#running + 1] = items[i]
    running[#running + 1] = string.format("%.0f", items[i + 1] - now)
end
return {running, discarded}
"""

_SCHEMES = ("redis://", "rediss://", "unix://")


def redis_url(settings: BaseSettings) -> str:
    """The Redis the store connects to.

    ``ROBOTS_STORE_URL``, else scrapy-redis's ``REDIS_URL``, else its
    ``REDIS_HOST`` / ``REDIS_PORT`` (``localhost`` / ``6379``, scrapy-redis's
    defaults, which also apply when none of these is set).
    """
    name = "ROBOTS_STORE_URL" if text(settings, "ROBOTS_STORE_URL") else "REDIS_URL"
    url = settings.get(name)
    if url:
        if not isinstance(url, str) or not url.startswith(_SCHEMES):
            raise SettingError(
                f"{name} must be a Redis URL (redis://, rediss:// or unix://) "
                f"for ROBOTS_STORE='redis', not {masked(str(url))!r}"
            )
        return url
    host = settings.get("REDIS_HOST") or "localhost"
    port = settings.getint("REDIS_PORT", 6379)
    return f"redis://{host}:{port}"


class RedisStore(OutcomeStore):
    """Outcomes in Redis under ``prefix``, shared by every worker using it.

    Connection failures and timeouts raise :class:`StoreError` after a short
    retry, so a lost Redis costs a crawl seconds, not minutes.  An entry
    larger than ``max_entry_bytes`` is not written (and the origin's older
    entry deleted): that outcome stays in the memory of the worker that
    fetched it.
    """

    shared = True

    def __init__(
        self,
        url: str = "redis://localhost:6379",
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 5.0,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        crawler: Crawler | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self._crawler = crawler
        # redis-py's default retries ten times with backoff: several seconds
        # per call once Redis is gone, for every request of the crawl.
        try:
            self._client = Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
            )
        except ValueError as exc:  # a port or an option redis-py cannot read
            hint = ""
            if ambiguous(url):
                hint = (
                    " (an '@' comes after the host redis-py reads: a '/', '?' or"
                    " '#' in a user name or password must be percent-encoded,"
                    " as %2F, %3F, %23)"
                )
            raise SettingError(
                f"Redis URL {masked(url)}: {redacted(str(exc), url)}{hint}"
            ) from None
        self._string_script = self._client.register_script(_STRING)
        self._release_script = self._client.register_script(_RELEASE)
        self._reserve_script = self._client.register_script(_RESERVE)
        self._hold_script = self._client.register_script(_HOLD)
        self._held_script = self._client.register_script(_HELD)
        self._extend_script = self._client.register_script(_EXTEND)
        # The sorted set of the origins paused now.
        self._holds_key = f"{prefix}holds"
        # The token of each lease this store holds.
        self._tokens: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not is_asyncio_available():
            raise StoreError(
                "the Redis store needs an asyncio event loop: the asyncio "
                "reactor (Scrapy's default TWISTED_REACTOR) or reactor-less mode"
            )
        config = RobotsConfig.for_crawler(crawler)
        return cls(
            redis_url(crawler.settings),
            prefix=config.store_prefix or "",
            max_entry_bytes=config.store_max_entry_bytes,
            crawler=crawler,
        )

    def _key(self, kind: str, origin: str) -> str:
        return f"{self.prefix}{kind}:{origin}"

    async def get(self, origin: str) -> Outcome | None:
        data = await self._call(
            self._string_script(keys=[self._key("outcome", origin)])
        )
        return None if data is None else decode(data, origin, self._crawler)

    async def put(self, origin: str, outcome: Outcome) -> None:
        key = self._key("outcome", origin)
        # A TTL relative to this worker's clock, so a Redis server whose
        # clock differs still drops the entry at the right moment.
        ttl_ms = int((outcome.retain_until - time.time()) * 1000)
        data = encode(outcome) if ttl_ms > 0 else b""
        if len(data) > self.max_entry_bytes:
            oversized(self._crawler, origin, len(data), self.max_entry_bytes)
            data = b""
        if not data:
            # Nothing to keep; an older entry must not outlive its successor.
            await self._call(self._client.delete(key))
        else:
            await self._call(self._client.set(key, data, px=ttl_ms))

    async def get_record(self, key: str) -> str | None:
        data = await self._call(self._string_script(keys=[self._key("record", key)]))
        if not data:  # none, or a key of another type
            return None
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)

    async def put_record(self, key: str, value: str, retain_until: float) -> None:
        name = self._key("record", key)
        ttl_ms = int((retain_until - time.time()) * 1000)
        if ttl_ms <= 0:
            await self._call(self._client.delete(name))
        else:
            await self._call(self._client.set(name, value, px=ttl_ms))

    async def acquire(self, origin: str, ttl: float) -> bool:
        token = uuid.uuid4().hex
        taken = await self._call(
            self._client.set(
                self._key("lease", origin),
                token,
                nx=True,
                px=max(1, int(ttl * 1000)),
            )
        )
        if not taken:
            return False
        self._tokens[origin] = token
        return True

    async def release(self, origin: str) -> None:
        token = self._tokens.pop(origin, None)
        if token is not None:
            await self._call(
                self._release_script(keys=[self._key("lease", origin)], args=[token])
            )

    async def reserve(
        self, origin: str, interval: float, limit: float | None = None
    ) -> float:
        wait, discarded = await self._call(
            self._reserve_script(
                keys=[self._key("turn", origin)], args=_micros(interval, limit)
            )
        )
        self._discarded(origin, discarded)
        return int(wait) / 1_000_000

    async def hold(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        discarded = await self._call(
            self._hold_script(
                keys=[self._key("turn", origin), self._holds_key],
                args=[*_micros(seconds, limit), origin],
            )
        )
        self._discarded(origin, discarded)

    async def extend(
        self, origin: str, seconds: float, limit: float | None = None
    ) -> None:
        discarded = await self._call(
            self._extend_script(
                keys=[self._key("turn", origin)], args=_micros(seconds, limit)
            )
        )
        self._discarded(origin, discarded)

    def _discarded(self, origin: str, micros: int | bytes) -> None:
        """Count and log a stored turn a script found ``micros`` ahead (0:
        none)."""
        if int(micros):
            turn_discarded(self._crawler, origin, int(micros) / 1_000_000)

    async def held(self, limit: float | None = None) -> dict[str, float]:
        most = _NO_LIMIT if limit is None else math.ceil(limit * 1_000_000)
        running, discarded = await self._call(
            self._held_script(keys=[self._holds_key], args=[most, HELD_MAX])
        )
        for origin, ahead in _pairs(discarded):
            turn_discarded(self._crawler, origin, ahead)
        return dict(_pairs(running))

    async def close(self) -> None:
        await self._call(self._client.aclose())

    async def _call(self, call: Awaitable[_T]) -> _T:
        try:
            return await call
        # TypeError / ValueError: an option of the URL redis-py rejects only
        # when it first connects (?Password=..., ?socket_timeout=abc).
        except (RedisError, OSError, TypeError, ValueError) as exc:
            raise StoreError(
                f"Redis store {masked(self.url)}: {redacted(str(exc), self.url)}"
            ) from exc


def _micros(seconds: float, limit: float | None) -> list[int]:
    """A turn script's first arguments: ``seconds`` (at least 1 us) and how
    far ahead a stored turn is trusted (``limit``, at least that), in
    microseconds."""
    step = max(1, math.ceil(seconds * 1_000_000))
    return [step, step if limit is None else max(step, math.ceil(limit * 1_000_000))]


def _pairs(flat: list[bytes | str]) -> list[tuple[str, float]]:
    """``[origin, microseconds, ...]`` from a script as ``(origin, seconds)``."""
    return [
        (
            origin.decode("utf-8", "replace") if isinstance(origin, bytes) else origin,
            int(micros) / 1_000_000,
        )
        for origin, micros in zip(flat[::2], flat[1::2], strict=False)
    ]
