"""Decoding a robots.txt body, whatever its ``Content-Encoding``, within a
limit of decoded bytes.

Pure (no Scrapy import): the fetcher feeds it the body as it arrives, the
``lint`` command and responses that come back whole (an HTTP cache hit) feed
it at once.  Every codec is driven with an output bound, one chunk at a
time, so a bomb costs at most the limit plus a chunk per stage of memory,
and :attr:`BoundedDecoder.done` says as soon as reading on is pointless.

Encodings: ``identity``; ``gzip`` / ``x-gzip``, any number of members back
to back; ``deflate``, zlib-wrapped or raw (as some servers send it); ``br``
with brotli or brotlicffi and ``zstd`` with ``compression.zstd`` (Python
3.14) or ``backports.zstd``, the modules Scrapy decodes them with, when they
are installed; and any stack of these (``gzip, br``), undone in reverse
order.  Anything else is reported in :attr:`BoundedDecoder.error`, as is
data that is not what its encoding says.

The work is bounded as well as the memory, whatever the stack: each stage
reads at most ``limit +`` :data:`SLACK` encoded bytes and starts at most
:data:`MAX_MEMBERS` gzip members or zstd frames, so one :meth:`feed
<BoundedDecoder.feed>` (and a whole body) costs at most that per stage, not
one step per empty member the outer stages unfold (three layers of gzip
make 4 million of them out of 772 bytes).  A body past these bounds is cut
(:attr:`BoundedDecoder.overrun` says why), as one past the limit is.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_CODINGS",
    "MAX_MEMBERS",
    "SLACK",
    "ZSTD_WINDOW_LOG_MAX",
    "BoundedDecoder",
    "codings",
    "decode",
    "supported",
]

_CHUNK = 65_536
#: How far the encoded bytes may run past the limit before the body counts
#: as cut although little of it decoded: compressed data that really
#: decodes to at most ``limit`` bytes is never that much larger (stored
#: deflate blocks cost 5 bytes per 64 KiB), so what is past it is padding
#: or empty members sent to keep the transfer going.
SLACK = 65_536


#: The most codings undone in a row: each holds a chunk and a codec's state
#: (a deflate window is 32 KiB), so a header naming thousands of them would
#: cost memory for nothing; real servers stack two at most.
MAX_CODINGS = 8

#: The most gzip members or zstd frames one stage decodes: servers send one,
#: concatenated files a few; past these the body is cut.  Each costs a codec
#: set up and a call however little it holds (an empty gzip member is 20
#: bytes, an empty zstd frame 9), which stacked encodings multiply for free.
MAX_MEMBERS = 256

#: The largest zstd window accepted, as a power of two: 8 MiB, what RFC 9659
#: requires of a ``Content-Encoding: zstd`` decoder; a frame asking for more
#: (up to 2 GiB) is undecodable rather than memory allocated.
ZSTD_WINDOW_LOG_MAX = 23


class _Undecodable(Exception):
    pass


class _Overrun(Exception):
    """A stage was asked for more work than any real body needs."""


def _brotli() -> Any:
    for name in ("brotli", "brotlicffi"):
        try:
            module = __import__(name)
            # Only a decoder that takes an output bound can be kept near the
            # limit (brotli >= 1.2, brotlicffi >= 1.2).
            module.Decompressor().process(b"", output_buffer_limit=1)
        except Exception:
            continue
        return module
    return None


def _zstd() -> Any:
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = __import__(name, fromlist=["ZstdDecompressor"])
        except ImportError:
            continue
        return module
    return None


_BROTLI = _brotli()
_ZSTD = _zstd()


class _Stage(Protocol):
    #: The encoded stream has ended; whatever follows it is ignored.
    finished: bool

    @property
    def whole(self) -> bool:
        """Whether the input so far ends where a stream may: finished, or
        between two gzip members or zstd frames."""

    def push(self, data: bytes) -> None:
        """More encoded input; only given once :meth:`pull` returned ``b""``."""

    def pull(self, size: int) -> bytes:
        """Up to about ``size`` decoded bytes; ``b""`` when it needs input."""


class _Zlib:
    """``gzip`` (members back to back) or ``deflate`` (zlib or raw)."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._members = 0
        self._pending = b""
        self._more = False  # the last call filled its output: ask again
        # The first bytes of the member being read (None before any), and
        # whether it gave output.
        self._magic: bytes | None = None
        self._gave = False
        self.finished = False
        # 32 + MAX_WBITS reads a gzip or a zlib header; deflate waits for
        # two bytes to tell a zlib header from raw deflate.
        self._inflater: Any = zlib.decompressobj(32 + zlib.MAX_WBITS) if gzip else None

    @property
    def whole(self) -> bool:
        if self.finished or not self._members or self._pending:
            return self.finished
        # Between members, or after bytes no gzip member starts with that gave
        # nothing (a stray newline: junk, as gzip readers ignore it).
        return self._magic is None or (not self._gave and self._magic != b"\x1f\x8b")

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, size: int) -> bytes:
        while not self.finished:
            if self._members >= MAX_MEMBERS:
                if self._pending:
                    raise _Overrun(f"more than {MAX_MEMBERS} gzip members")
                return b""
            if self._inflater is None:
                if len(self._pending) < 2:
                    return b""
                head = self._pending[0] << 8 | self._pending[1]
                zlib_header = self._pending[0] & 0x0F == 8 and head % 31 == 0
                wbits = zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS
                self._inflater = zlib.decompressobj(wbits)
            if not self._pending and not self._more:
                return b""
            inflater = self._inflater
            if self._magic is None:
                self._magic = self._pending[:2]
            try:
                out: bytes = inflater.decompress(self._pending, size)
            except zlib.error as exc:
                if self._gzip and self._members:
                    # Not another member: trailing bytes (zeros, junk) after
                    # whole members, which gzip readers ignore too.
                    self.finished = True
                    return b""
                raise _Undecodable(f"{exc}") from None
            self._more = len(out) >= size
            self._gave = self._gave or bool(out)
            if inflater.eof:
                self._pending = inflater.unused_data
                self._more = False
                if self._gzip:
                    self._members += 1
                    self._inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)
                    self._magic, self._gave = None, False
                else:
                    self.finished = True
            else:
                self._pending = inflater.unconsumed_tail
            if out:
                return out
        return b""


class _Brotli:
    def __init__(self) -> None:
        self._decoder = _BROTLI.Decompressor()
        self._pending = b""
        # The last call gave output: more may wait inside the decoder, which
        # may give more than output_buffer_limit and still say it can take
        # input (brotli 1.2).
        self._more = False
        self.finished = False

    @property
    def whole(self) -> bool:
        return self.finished

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, size: int) -> bytes:
        decoder = self._decoder
        while not self.finished:
            if self._more or not decoder.can_accept_more_data():
                data = b""  # output of input already given may be waiting
            elif self._pending:
                data, self._pending = self._pending, b""
            else:
                return b""
            try:
                out: bytes = decoder.process(data, output_buffer_limit=size)
            except Exception as exc:  # brotli.error / brotlicffi.error
                raise _Undecodable(f"{exc}") from None
            self.finished = decoder.is_finished()
            self._more = bool(out)
            if out:
                return out
            if not data and not decoder.can_accept_more_data():
                return b""  # nothing came of pending output: never spin
        return b""


class _Zstd:
    """``zstd``, frames back to back."""

    def __init__(self) -> None:
        self._frames = 0
        self._decoder = self._new()
        self._pending = b""
        self._started = False  # the frame being read has had input
        self.finished = False

    @staticmethod
    def _new() -> Any:
        parameter = getattr(_ZSTD, "DecompressionParameter", None)
        if parameter is None:  # a zstd module without options: its default
            return _ZSTD.ZstdDecompressor()
        return _ZSTD.ZstdDecompressor(
            options={parameter.window_log_max: ZSTD_WINDOW_LOG_MAX}
        )

    @property
    def whole(self) -> bool:
        fresh = not self._started
        return self.finished or (self._frames > 0 and fresh and not self._pending)

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, size: int) -> bytes:
        while not self.finished:
            if self._frames >= MAX_MEMBERS:
                if self._pending:
                    raise _Overrun(f"more than {MAX_MEMBERS} zstd frames")
                return b""
            decoder = self._decoder
            if decoder.needs_input:
                if not self._pending:
                    return b""
                data, self._pending = self._pending, b""
            else:
                data = b""
            self._started = True
            try:
                out: bytes = decoder.decompress(data, size)
            except Exception as exc:  # zstd.ZstdError
                if self._frames:
                    self.finished = True  # trailing bytes after whole frames
                    return b""
                raise _Undecodable(f"{exc}") from None
            if decoder.eof:
                self._frames += 1
                self._pending = decoder.unused_data + self._pending
                self._decoder = self._new()
                self._started = False
            elif not out and not data:
                return b""  # nothing came of pending output: never spin
            if out:
                return out
        return b""


def _stage(encoding: str) -> _Stage | None:
    if encoding in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if encoding == "deflate":
        return _Zlib(gzip=False)
    if encoding == "br" and _BROTLI is not None:
        return _Brotli()
    if encoding == "zstd" and _ZSTD is not None:
        return _Zstd()
    return None


def supported() -> tuple[str, ...]:
    """The encodings this installation decodes, for ``Accept-Encoding``."""
    return tuple(
        name
        for name, available in (
            ("gzip", True),
            ("deflate", True),
            ("br", _BROTLI is not None),
            ("zstd", _ZSTD is not None),
        )
        if available
    )


#: The ``Accept-Encoding`` of a robots.txt request: what is decoded here.
ACCEPT_ENCODING = ", ".join(supported())


def codings(encodings: Iterable[str | bytes]) -> tuple[str, ...]:
    """The codings of ``Content-Encoding`` values, in the order applied,
    lower-cased, ``identity`` left out."""
    tokens = []
    for value in encodings:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for part in text.split(","):
            token = part.strip().lower()
            if token and token != "identity":
                tokens.append(token)
    return tuple(tokens)


class BoundedDecoder:
    """A body with the ``Content-Encoding`` values ``encodings``, decoded as
    it is fed, keeping at most ``limit + 1`` decoded bytes.

    After each :meth:`feed`: :attr:`cut` once the body is known to be longer
    than ``limit`` (or the input of one of its stages ran :data:`SLACK` bytes
    past it, or held more than :data:`MAX_MEMBERS` members: :attr:`overrun`),
    :attr:`error` once it cannot be decoded (an encoding not supported, data
    that is not what it claims), and :attr:`done` once any of these or the
    end of the encoded stream makes further input pointless.
    """

    __slots__ = (
        "_input",
        "_output",
        "_stages",
        "codings",
        "consumed",
        "cut",
        "encoded",
        "error",
        "limit",
        "overrun",
    )

    def __init__(self, encodings: Iterable[str | bytes], limit: int) -> None:
        self.limit = limit
        #: Encoded bytes fed so far.
        self.encoded = 0
        self.cut = False
        #: Why the body was cut before its decoded size passed ``limit``:
        #: a stage's input too long or too many members (``None`` if not).
        self.overrun: str | None = None
        self.error: str | None = None
        self._output = bytearray()
        self._input = b""
        #: The codings to undo, as :func:`codings` lists them.
        self.codings = codings(encodings)
        stages: list[_Stage] = []
        if len(self.codings) > MAX_CODINGS:
            self.error = (
                f"{len(self.codings)} stacked encodings (more than {MAX_CODINGS})"
            )
        # Content-Encoding lists codings in the order they were applied:
        # the last one is undone first.
        for token in () if self.error else reversed(self.codings):
            stage = _stage(token)
            if stage is None:
                self.error = f"Content-Encoding {token!r} is not supported"
                break
            stages.append(stage)
        self._stages = stages
        #: Encoded bytes given to each stage, the first undone first.
        self.consumed = [0] * len(stages)

    @property
    def done(self) -> bool:
        """Whether further input would change nothing."""
        return (
            self.cut
            or self.error is not None
            or bool(self._stages and self._stages[-1].finished)
        )

    @property
    def body(self) -> bytes:
        """What is decoded so far: at most ``limit + 1`` bytes."""
        return bytes(self._output)

    def feed(self, data: bytes) -> bool:
        """Decode ``data``, the next encoded bytes; returns :attr:`done`."""
        if self.done:
            return True
        self.encoded += len(data)
        if not self._stages:
            self._take(data)
        else:
            self._input = data
            last = len(self._stages) - 1
            try:
                while not self.cut:
                    room = self.limit + 1 - len(self._output)
                    out = self._pull(last, min(room, _CHUNK))
                    if not out:
                        break
                    self._take(out)
            except _Undecodable as exc:
                self.error = f"not valid {self._names()}: {exc}"
            except _Overrun as exc:
                self.overrun = f"{exc}"
                self.cut = True
            self._input = b""
        if self.encoded > self.limit + SLACK and not self.cut:
            self.overrun = f"more than {self.limit + SLACK} encoded bytes"
            self.cut = True
        return self.done

    def end(self) -> None:
        """The encoded body is all in: one that stops part-way through a
        stream (a gzip member, a zstd frame, a deflate or br stream) is
        :attr:`error`, the rules after the cut unknown.  An empty body is
        an empty file."""
        if self.done or not self.encoded:
            return
        if not all(stage.whole for stage in self._stages):
            self.error = f"truncated {self._names()} stream"

    def _names(self) -> str:
        names = {type(stage) for stage in self._stages}
        return "/".join(
            sorted(
                {_Zlib: "gzip or deflate", _Brotli: "br", _Zstd: "zstd"}[kind]
                for kind in names
            )
        )

    def _take(self, out: bytes) -> None:
        room = self.limit + 1 - len(self._output)
        self._output += out[:room]
        if len(self._output) > self.limit:
            self.cut = True

    def _pull(self, index: int, size: int) -> bytes:
        """Up to about ``size`` bytes out of stage ``index``, feeding it from
        the stage before (or the input) a chunk at a time, at most ``limit +
        SLACK`` bytes in all: compressed data never needs more than that
        (see :data:`SLACK`), whatever it decodes to."""
        stage = self._stages[index]
        while True:
            out = stage.pull(size)
            if out or stage.finished:
                return out
            if index == 0:
                if not self._input:
                    return b""
                data, self._input = self._input, b""
            else:
                data = self._pull(index - 1, _CHUNK)
                if not data:
                    return b""
            room = self.limit + SLACK - self.consumed[index]
            if room <= 0:
                raise _Overrun(
                    f"more than {self.limit + SLACK} bytes of"
                    f" {self.codings[-1 - index]} input"
                )
            if len(data) > room:
                data = data[:room]
            self.consumed[index] += len(data)
            stage.push(data)


def decode(body: bytes, encodings: Iterable[str | bytes], limit: int) -> BoundedDecoder:
    """:class:`BoundedDecoder` fed a whole ``body``, a chunk at a time so
    that no codec holds much more than a chunk of input."""
    decoder = BoundedDecoder(encodings, limit)
    view = memoryview(body)
    for start in range(0, len(body), _CHUNK):
        if decoder.feed(bytes(view[start : start + _CHUNK])):
            break
    decoder.end()
    return decoder
