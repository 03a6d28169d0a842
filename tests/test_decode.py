"""The bounded decoder of robots.txt bodies: every encoding, every bomb."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import brotli
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import _decode
from scrapy_rfc9309._decode import (
    MAX_CODINGS,
    MAX_MEMBERS,
    SLACK,
    ZSTD_WINDOW_LOG_MAX,
    BoundedDecoder,
    decode,
)
from tests.support.utils import raw_deflate

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd

LIMIT = 512_000
MiB = 1024 * 1024
RULES = b"User-agent: *\nDisallow: /private\n"


def _gzip_member(size: int) -> bytes:
    """A gzip member of ``size`` zeros: about size / 1000 bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MiB)
    parts = [compressor.compress(zeros) for _ in range(size // MiB)]
    return b"".join([*parts, compressor.flush()])


ENCODED = {
    "identity": (RULES, []),
    "gzip": (gzip.compress(RULES), ["gzip"]),
    "x-gzip": (gzip.compress(RULES), ["X-Gzip"]),
    "zlib deflate": (zlib.compress(RULES), ["deflate"]),
    "raw deflate": (raw_deflate(RULES), ["deflate"]),
    "br": (brotli.compress(RULES), ["br"]),
    "zstd": (zstd.compress(RULES), ["zstd"]),
    "gzip, gzip": (gzip.compress(gzip.compress(RULES)), ["gzip, gzip"]),
    "deflate then br, two headers": (
        brotli.compress(zlib.compress(RULES)),
        ["deflate", "br"],
    ),
    "identity, gzip": (gzip.compress(RULES), ["identity, gzip"]),
}


@pytest.mark.parametrize("case", ENCODED)
def test_every_encoding_decodes(case: str) -> None:
    body, encodings = ENCODED[case]
    decoder = decode(body, encodings, LIMIT)
    assert (decoder.body, decoder.cut, decoder.error) == (RULES, False, None)


@pytest.mark.parametrize("case", ENCODED)
def test_every_encoding_decodes_fed_a_byte_at_a_time(case: str) -> None:
    body, encodings = ENCODED[case]
    decoder = BoundedDecoder(encodings, LIMIT)
    for offset in range(len(body)):
        decoder.feed(body[offset : offset + 1])
    assert (decoder.body, decoder.error) == (RULES, None)


def test_gzip_members_back_to_back_are_all_decoded() -> None:
    body = gzip.compress(b"User-agent: *\n") + gzip.compress(b"Disallow: /x\n")
    assert decode(body, ["gzip"], LIMIT).body == b"User-agent: *\nDisallow: /x\n"


def test_zstd_frames_back_to_back_are_all_decoded() -> None:
    body = zstd.compress(b"User-agent: *\n") + zstd.compress(b"Disallow: /x\n")
    assert decode(body, ["zstd"], LIMIT).body == b"User-agent: *\nDisallow: /x\n"


def test_trailing_junk_after_whole_gzip_members_is_ignored() -> None:
    decoder = decode(gzip.compress(RULES) + bytes(64) + b"junk", ["gzip"], LIMIT)
    assert (decoder.body, decoder.error, decoder.done) == (RULES, None, True)


def _bombs() -> dict[str, tuple[bytes, list[str]]]:
    member = _gzip_member(16 * MiB)
    zeros = bytes(64 * MiB)
    return {
        # 40 members of 16 MiB: 640 MiB decoded from ~650 KB.
        "multi-member gzip": (member * 40, ["gzip"]),
        "raw deflate": (raw_deflate(zeros), ["deflate"]),
        "br": (brotli.compress(zeros, quality=1), ["br"]),
        "zstd": (zstd.compress(zeros), ["zstd"]),
        "gzip, gzip": (gzip.compress(member * 8, compresslevel=9), ["gzip, gzip"]),
    }


BOMBS = _bombs()


@pytest.mark.parametrize("case", BOMBS)
def test_bombs_stop_at_the_limit_in_bounded_memory(case: str) -> None:
    body, encodings = BOMBS[case]
    tracemalloc.start()
    try:
        decoder = decode(body, encodings, LIMIT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoder.cut
    assert decoder.error is None
    assert len(decoder.body) == LIMIT + 1
    # The limit and a few chunks: not the bomb (640 MiB, 64 MiB).
    assert peak < 2 * LIMIT


def test_the_bomb_is_cut_as_soon_as_the_limit_is_certain() -> None:
    member = _gzip_member(16 * MiB)
    decoder = BoundedDecoder(["gzip"], LIMIT)
    fed = 0
    for _ in range(40):
        fed += len(member)
        if decoder.feed(member):
            break
    # The first member alone passes the limit: nothing more is asked for.
    assert fed == len(member)
    assert decoder.cut


def test_a_small_first_member_then_endless_empty_members_is_cut() -> None:
    # Each empty member decodes to nothing: only the encoded size can tell.
    decoder = BoundedDecoder(["gzip"], LIMIT)
    decoder.feed(gzip.compress(RULES))
    empty = gzip.compress(b"") * 1000
    fed = 0
    while not decoder.feed(empty):
        fed += len(empty)
        assert fed < 10 * MiB
    assert decoder.cut
    assert decoder.encoded <= LIMIT + SLACK + len(empty)
    assert decoder.body == RULES


def test_identity_is_cut_at_the_limit() -> None:
    decoder = BoundedDecoder([], 10)
    assert not decoder.feed(b"12345")
    assert decoder.feed(b"67890abc")
    assert (decoder.body, decoder.cut) == (b"1234567890a", True)


@pytest.mark.parametrize(
    ("body", "encodings", "error"),
    [
        (RULES, ["compress"], "Content-Encoding 'compress' is not supported"),
        (
            gzip.compress(RULES, mtime=0),
            ["gzip, aes128gcm"],
            "'aes128gcm' is not supported",
        ),
        (RULES, ["gzip"], "not valid gzip or deflate"),
        (RULES, ["br"], "not valid br"),
        (RULES, ["zstd"], "not valid zstd"),
    ],
)
def test_unknown_or_invalid_encodings_are_reported(
    body: bytes, encodings: list[str], error: str
) -> None:
    decoder = decode(body, encodings, LIMIT)
    assert decoder.error is not None
    assert error in decoder.error
    assert decoder.done


@pytest.mark.parametrize(("attribute", "name"), [("_BROTLI", "br"), ("_ZSTD", "zstd")])
def test_a_codec_not_installed_is_an_unsupported_encoding(
    monkeypatch: pytest.MonkeyPatch, attribute: str, name: str
) -> None:
    monkeypatch.setattr(_decode, attribute, None)
    assert name not in _decode.supported()
    decoder = decode(ENCODED[name][0], [name], LIMIT)
    assert decoder.error == f"Content-Encoding {name!r} is not supported"
    assert decoder.body == b""


def test_accept_encoding_lists_what_is_decoded() -> None:
    assert _decode.ACCEPT_ENCODING == "gzip, deflate, br, zstd"


@given(
    body=st.binary(max_size=2048),
    encodings=st.lists(
        st.sampled_from(["gzip", "deflate", "br", "zstd", "identity", "xz", ""]),
        max_size=3,
    ),
    limit=st.integers(min_value=1, max_value=4096),
    chunk=st.integers(min_value=1, max_value=512),
)
@settings(max_examples=300, deadline=None)
def test_any_bytes_in_any_encoding_never_raise(
    body: bytes, encodings: list[str], limit: int, chunk: int
) -> None:
    decoder = BoundedDecoder([", ".join(encodings)], limit)
    for start in range(0, len(body), chunk):
        decoder.feed(body[start : start + chunk])
    assert len(decoder.body) <= limit + 1
    assert decoder.cut == (
        len(decoder.body) > limit
        or decoder.encoded > limit + SLACK
        or decoder.overrun is not None
    )
    assert all(consumed <= limit + SLACK for consumed in decoder.consumed)


@given(data=st.binary(max_size=4096), chunk=st.integers(min_value=1, max_value=700))
@settings(max_examples=100, deadline=None)
def test_valid_streams_decode_exactly_in_any_chunking(data: bytes, chunk: int) -> None:
    for body, encodings in (
        (gzip.compress(data), ["gzip"]),
        (raw_deflate(data), ["deflate"]),
        (brotli.compress(data), ["br"]),
        (zstd.compress(data), ["zstd"]),
        (zstd.compress(gzip.compress(data)), ["gzip, zstd"]),
    ):
        decoder = BoundedDecoder(encodings, 1_000_000)
        for start in range(0, len(body), chunk):
            decoder.feed(body[start : start + chunk])
        decoder.end()
        assert (decoder.body, decoder.error) == (data, None)


def test_at_most_max_codings_are_undone() -> None:
    body = RULES
    for _ in range(MAX_CODINGS):
        body = gzip.compress(body)
    assert decode(body, [", ".join(["gzip"] * MAX_CODINGS)], LIMIT).body == RULES
    decoder = decode(
        gzip.compress(body), [", ".join(["gzip"] * (MAX_CODINGS + 1))], LIMIT
    )
    assert decoder.error == f"{MAX_CODINGS + 1} stacked encodings (more than 8)"
    assert decoder.body == b""


# -- work, not only memory: stacked encodings of empty members (issue 24, F1) ---

HOSTILE = Path(__file__).parent / "data" / "hostile"


class _CodecSpy:
    """A codec object that counts the calls made to it."""

    def __init__(self, inner: Any, calls: list[int]) -> None:
        self._inner = inner
        self._calls = calls
        calls[1] += 1

    def decompress(self, data: bytes, size: int = -1) -> bytes:
        self._calls[0] += 1
        out: bytes = self._inner.decompress(data, size)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def count_codec_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[decompress calls, codec objects made] of every zlib and zstd stage."""
    calls = [0, 0]
    monkeypatch.setattr(
        _decode,
        "zlib",
        SimpleNamespace(
            MAX_WBITS=zlib.MAX_WBITS,
            error=zlib.error,
            decompressobj=lambda wbits: _CodecSpy(zlib.decompressobj(wbits), calls),
        ),
    )
    monkeypatch.setattr(
        _decode,
        "_ZSTD",
        SimpleNamespace(
            DecompressionParameter=zstd.DecompressionParameter,
            ZstdDecompressor=lambda **kw: _CodecSpy(zstd.ZstdDecompressor(**kw), calls),
        ),
    )
    return calls


#: What a stage may cost: a codec object per member and one call per member
#: and per chunk of input and output (limit + SLACK each way).
CALLS_PER_STAGE = MAX_MEMBERS + 2 * (LIMIT + SLACK) // 65_536 + 4


@pytest.mark.parametrize(
    ("name", "encoding", "stages", "unit"),
    [
        # 772 bytes: 4 million empty gzip members inside two gzip layers.
        ("gzip3-empty-members.gz", "gzip, gzip, gzip", 3, "gzip members"),
        # 35 KB: 2 million empty zstd frames (9 bytes each) inside gzip.
        ("zstd-gzip-empty-frames.gz", "zstd, gzip", 2, "zstd frames"),
    ],
)
def test_empty_members_in_stacked_encodings_cost_a_bounded_work(
    monkeypatch: pytest.MonkeyPatch, name: str, encoding: str, stages: int, unit: str
) -> None:
    # One feed of the whole body used to walk every empty member in one call
    # (5 s and 19 s on the event loop); now at most MAX_MEMBERS per stage.
    body = (HOSTILE / name).read_bytes()
    calls = count_codec_calls(monkeypatch)
    decoder = BoundedDecoder([encoding], LIMIT)
    assert decoder.feed(body)
    assert decoder.body == RULES
    assert decoder.cut
    assert decoder.overrun == f"more than {MAX_MEMBERS} {unit}"
    assert decoder.error is None
    made, walked = calls[1], calls[0]
    assert made <= stages * (MAX_MEMBERS + 1)
    assert walked <= stages * CALLS_PER_STAGE
    assert all(consumed <= LIMIT + SLACK for consumed in decoder.consumed)


def test_max_members_are_decoded_and_one_more_is_cut() -> None:
    member = gzip.compress(b"a\n")
    decoder = decode(member * MAX_MEMBERS, ["gzip"], LIMIT)
    assert (decoder.body, decoder.cut, decoder.overrun) == (
        b"a\n" * MAX_MEMBERS,
        False,
        None,
    )
    decoder = decode(member * (MAX_MEMBERS + 1), ["gzip"], LIMIT)
    assert decoder.body == b"a\n" * MAX_MEMBERS
    assert decoder.overrun == f"more than {MAX_MEMBERS} gzip members"
    frame = zstd.compress(b"a\n")
    decoder = decode(frame * (MAX_MEMBERS + 1), ["zstd"], LIMIT)
    assert decoder.body == b"a\n" * MAX_MEMBERS
    assert decoder.overrun == f"more than {MAX_MEMBERS} zstd frames"


def test_an_inner_stage_reads_at_most_slack_past_the_limit() -> None:
    # One gzip member of 20 MB of empty stored deflate blocks (5 bytes each,
    # decoding to nothing) before the rules, in a 20 KB outer gzip: the
    # inner stage used to read all of it; it stops at limit + SLACK.
    padding = b"\x00\x00\x00\xff\xff" * 4_000_000
    tail = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = tail.compress(RULES) + tail.flush()
    inner = (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        + padding
        + deflated
        + zlib.crc32(RULES).to_bytes(4, "little")
        + len(RULES).to_bytes(4, "little")
    )
    assert gzip.decompress(inner) == RULES
    decoder = decode(gzip.compress(inner), ["gzip, gzip"], LIMIT)
    assert decoder.cut
    assert decoder.consumed[1] == LIMIT + SLACK
    assert decoder.overrun == f"more than {LIMIT + SLACK} bytes of gzip input"
    assert decoder.body == b""


def test_a_zstd_window_over_8_mib_is_refused() -> None:
    compressor = zstd.ZstdCompressor(
        options={
            zstd.CompressionParameter.window_log: ZSTD_WINDOW_LOG_MAX + 4,
            zstd.CompressionParameter.content_size_flag: 0,
        }
    )
    body = compressor.compress(RULES) + compressor.flush()
    decoder = decode(body, ["zstd"], LIMIT)
    assert decoder.error is not None
    assert "not valid zstd" in decoder.error
    fits = zstd.ZstdCompressor(
        options={
            zstd.CompressionParameter.window_log: ZSTD_WINDOW_LOG_MAX,
            zstd.CompressionParameter.content_size_flag: 0,
        }
    )
    body = fits.compress(RULES) + fits.flush()
    assert decode(body, ["zstd"], LIMIT).body == RULES


def _large_robots_txt() -> bytes:
    """About 220 KB of rule lines, no two alike: a large real file."""
    return (
        b"".join(
            b"Disallow: /%x/%x\n" % ((n * 2654435761) % 2**64, n) for n in range(6_000)
        )
        + b"Disallow: /private\n"
    )


@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        ("br", brotli.compress),
        ("zstd", zstd.compress),
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
    ],
)
def test_a_large_body_decodes_whole_in_any_piece_size(
    coding: str, compress: Any
) -> None:
    # brotli 1.2 may give more than its output bound in one call and still
    # say it takes input: the rest waited inside it, and the body came out
    # short (131,024 of 221,195 bytes through decode(), 98,272 in one feed),
    # without a cut or an error, its last rules never obeyed.
    data = _large_robots_txt()
    body = compress(data)
    whole = decode(body, [coding], LIMIT)
    assert (whole.body, whole.error, whole.cut) == (data, None, False)
    for piece in (len(body), 1_000, 65_536 + 7):
        decoder = BoundedDecoder([coding], LIMIT)
        for start in range(0, len(body), piece):
            decoder.feed(body[start : start + piece])
        decoder.end()
        assert (decoder.body, decoder.error) == (data, None)


STREAMS = {
    "gzip": (gzip.compress, ["gzip"]),
    "zlib deflate": (zlib.compress, ["deflate"]),
    "raw deflate": (raw_deflate, ["deflate"]),
    "br": (brotli.compress, ["br"]),
    "zstd": (zstd.compress, ["zstd"]),
    "gzip, zstd": (lambda data: zstd.compress(gzip.compress(data)), ["gzip, zstd"]),
}


@pytest.mark.parametrize("case", STREAMS)
def test_a_stream_cut_short_is_an_error_not_the_whole_file(case: str) -> None:
    # A body whose length says it is whole (a Content-Length that matches,
    # or one ended by the connection closing) but whose stream stops
    # part-way: what came is the start of the file, and the rules after
    # the cut are unknown, as for a truncated transfer.
    compress, encodings = STREAMS[case]
    body = compress(_large_robots_txt())
    decoder = decode(body[: len(body) // 2], encodings, LIMIT)
    assert decoder.error is not None
    assert decoder.error.startswith("truncated ")


def test_a_stream_ending_between_gzip_members_or_zstd_frames_is_whole() -> None:
    members = gzip.compress(RULES) + gzip.compress(b"Allow: /\n")
    assert decode(members, ["gzip"], LIMIT).error is None
    frames = zstd.compress(RULES) + zstd.compress(b"Allow: /\n")
    assert decode(frames, ["zstd"], LIMIT).error is None
    # A second member begun, not ended.
    assert (
        decode(members[:-5], ["gzip"], LIMIT).error
        == "truncated gzip or deflate stream"
    )
    # An empty body: an empty file, whatever its encoding says.
    assert decode(b"", ["gzip"], LIMIT).error is None


@given(data=st.binary(min_size=1, max_size=2048), cut=st.floats(0.0, 0.999))
@settings(max_examples=200, deadline=None)
def test_every_stream_cut_anywhere_is_told(data: bytes, cut: float) -> None:
    for compress, encodings in STREAMS.values():
        body = compress(data)
        size = max(1, int(len(body) * cut))
        decoder = decode(body[:size], encodings, 1_000_000)
        assert decoder.error is not None, (encodings, size, len(body))


@pytest.mark.parametrize("junk", [b"\n", b" ", b"\x00", b"\x1f", b"\r\n", b"\x00" * 8])
def test_a_stray_byte_after_a_whole_gzip_member_is_ignored(junk: bytes) -> None:
    # A server's (PHP's) stray newline after its gzip output: gzip readers
    # ignore it, and so does Scrapy; one byte leaves zlib waiting for a
    # member's header, which is no truncated member.
    decoder = decode(gzip.compress(RULES) + junk, ["gzip"], LIMIT)
    assert (decoder.body, decoder.error) == (RULES, None)


def test_a_second_gzip_member_begun_and_cut_is_truncated() -> None:
    # Its header only: nothing decoded yet, but a member it is.
    second = gzip.compress(b"Disallow: /b\n")
    for size in (2, 10, len(second) - 1):
        body = gzip.compress(RULES) + second[:size]
        error = decode(body, ["gzip"], LIMIT).error
        assert error == "truncated gzip or deflate stream", size
