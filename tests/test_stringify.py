from __future__ import annotations

import pytest

from scrapy_rfc9309.licenses import robots_licenses
from scrapy_rfc9309.parse import Document, Group, Record, Rule, parse
from scrapy_rfc9309.stringify import readable, rule_line, signal_text, stringify


def test_layout() -> None:
    document = parse(
        "Sitemap: https://a/s.xml\n"
        "user-agent: FooBot\n"
        "useragent: BarBot\n"
        "disallow: /x # comment\n"
        "Content-Signal: ai-train=no, search=yes, other=later\n"
        "crawl-delay: 2\n"
        "Host: a\n"
        "User-agent: *\n"
        "Allow: /\n"
    )
    assert stringify(document) == (
        "User-agent: FooBot\n"
        "User-agent: BarBot\n"
        "Crawl-delay: 2.0\n"
        "Content-Signal: ai-train=no, search=yes, other=later\n"
        "Disallow: /x\n"
        # Where it was: in the first group (a License line applies to it).
        "host: a\n"
        "\n"
        "User-agent: *\n"
        "Allow: /\n"
        "\n"
        "Sitemap: https://a/s.xml\n"
    )


def test_empty() -> None:
    assert stringify(Document()) == ""
    assert parse(stringify(Document())) == Document()


@pytest.mark.parametrize("profile", ["rfc9309", "google"])
@pytest.mark.parametrize(
    "body",
    [
        "User-agent: *\nDisallow:\n",
        "User-agent:\nDisallow: /\n",
        "User-agent: a\nUser-agent: b\nCrawl-delay: 0.25\nDisallow: /x\n"
        "User-agent: c\n",
        "User-agent: *\nDisallow: /ツ\nAllow: /%E3%83%84*$\n",
        b"User-agent: *\nDisallow: /caf\xe9\n\xff: \xfe\n",
        "<html>\n<br />\nUser-agent: *<br />\nDisallow: /<br />\n",
        "User-agent: *\nDisallowed: /x\nsite-map: https://a/b\nfoo bar\n",
        "Crawl-delay: 3\nUser-agent: *\nContent-Signal: x=y=z, a=\n",
    ],
)
def test_round_trip(body: str | bytes, profile: str) -> None:
    document = parse(body, profile=profile)
    again = parse(stringify(document), profile=profile)
    assert again.without_lines() == document.without_lines()


# Whatever reaches the length a reader keeps of a line.
CAP = 2083 * 8 - 1


@pytest.mark.parametrize("profile", ["rfc9309", "google", "yandex", "bing"])
@pytest.mark.parametrize("key", ["Disallow", "Sitemap", "host", "User-agent"])
def test_round_trip_of_a_line_as_long_as_a_reader_keeps(key: str, profile: str) -> None:
    # Written without a space after the colon and up to the cap: the space
    # stringify usually writes would take the line past it, and cut it.
    line = f"{key}:/" + "x" * (CAP - len(key) - 2)
    body = f"User-agent: *\n{line}\nDisallow: /\n"
    document = parse(body, profile=profile)
    again = parse(stringify(document), profile=profile)
    assert again.without_lines() == document.without_lines()


def _from_dict(**group: object) -> Document:
    return Document.from_dict(
        {
            "groups": [{"user_agents": ["*"], "rules": [], **group}],
            "sitemaps": [],
            "profile": "rfc9309",
        }
    )


@pytest.mark.parametrize(
    ("document", "unsaid"),
    [
        # A rule that would read back as other lines: here, a group of its own
        # allowing everything.
        (
            _from_dict(rules=[["disallow", "/a\nUser-agent: evil\nAllow: /", 1]]),
            r"'Disallow: /a\nUser-agent: evil\nAllow: /' of group 1",
        ),
        (_from_dict(rules=[["disallow", "/a#b", 1]]), "'Disallow: /a#b' of group 1"),
        (_from_dict(rules=[["allow", "/a\x00b", 1]]), r"'Allow: /a\x00b' of group 1"),
        (_from_dict(rules=[["disallow", " /a", 1]]), "'Disallow:  /a' of group 1"),
        (_from_dict(user_agents=["bot\nDisallow: /"]), "the user-agents of group 1"),
        (
            _from_dict(content_usage=[["/a", "train-ai=n\nAllow: /", 1]]),
            "the content usage of group 1",
        ),
        (_from_dict(content_signals={"ai-train": "no, search=no"}), "the content"),
        (
            Document((Group(("a",)), Group(("b",), (Rule(False, "/", 0),)))),
            "the user-agents of group 1 (User-agent: 'a')",
        ),
        (Document((Group((), (Rule(False, "/", 0),)),)), "its 1 groups (read back: 0)"),
        (
            Document(sitemaps=("https://a/s.xml", "https://a/t.xml#x")),
            "the sitemap 'https://a/t.xml#x'",
        ),
        (Document(records=(Record("host", "a\nb", 0),)), r"the record 'host: a\nb'"),
        (Document(records=(Record("disallow", "/", 0),)), "the record 'disallow: /'"),
    ],
)
def test_what_robots_txt_cannot_say_is_refused(document: Document, unsaid: str) -> None:
    with pytest.raises(ValueError, match=r"^robots\.txt cannot say ") as raised:
        stringify(document)
    assert unsaid in str(raised.value)


def test_a_misspelt_key_at_the_length_cap_is_refused() -> None:
    # "Disalow:/xxx..." read up to the cap: "Disallow:" takes it one past.
    document = parse(f"User-agent: *\nDisalow:/{'x' * (CAP - 9)}\n")
    assert len(document.groups[0].rules[0].pattern) == CAP - 8
    with pytest.raises(ValueError, match=r"cannot say 'Disallow:/xxx.*' of group 1"):
        stringify(document)


def test_an_empty_content_usage_line_ends_with_its_colon() -> None:
    document = parse("User-agent: *\nContent-Usage:\n")
    assert stringify(document) == "User-agent: *\nContent-Usage:\n"


def test_undecodable_octets_are_shown_as_their_percent_escapes() -> None:
    # Compared in tuples: pytest shows strings in a tuple by their repr,
    # where a lone surrogate is an escape (pytest-xdist cannot carry one).
    document = parse(
        b"User-agent: *\nContent-Signal: ai-train=\xe9\nDisallow: /\xe9t\xe9\n"
    )
    (group,) = document.groups
    (rule,) = group.rules
    signal = signal_text(group.content_signals["ai-train"])
    # Written back, robots.txt holds the octets themselves...
    assert (rule_line(rule), signal) == ("Disallow: /\udce9t\udce9", "\udce9")
    assert parse(stringify(document)).without_lines() == document.without_lines()
    # ...shown, each is the escape a URL matches it with.
    assert (readable(rule_line(rule)), readable(signal)) == (
        "Disallow: /%E9t%E9",
        "%E9",
    )
    # A lone surrogate of a str given by hand: the octets surrogatepass
    # makes of it.  Text that is UTF-8 is left alone.
    assert (readable("/a\ud800"),) == ("/a%ED%A0%80",)
    assert (readable("/café %E9 \U0001f600"),) == ("/café %E9 \U0001f600",)
    for text in ("/\udce9", "\udcff\ud800\udfff", "a\udc80b"):
        assert readable(text).isascii(), ascii(readable(text))


def _rules(count: int) -> bytes:
    # Compact lines: 504,013 bytes, under the 512,000 a reader keeps.
    return b"User-agent:*\n" + b"".join(b"Disallow:/p%06d\n" % n for n in range(count))


@pytest.mark.parametrize("profile", ["rfc9309", "yandex"])
def test_a_file_near_the_limit_is_written_as_short_as_it_can_be(profile: str) -> None:
    # Written with ": " and blank lines, it took 532,014 bytes: a reader (this
    # package's default, Google's 500 KiB) lost its last 1,054 rules, and
    # Yandex's profile refused it with a message naming no size.
    document = parse(_rules(28_000), profile=profile)
    text = stringify(document)
    assert len(text.encode()) <= 512_000
    assert parse(text, profile=profile).without_lines() == document.without_lines()


def test_a_document_no_file_of_the_limit_can_say_is_refused_by_its_size() -> None:
    document = parse(_rules(40_000), max_bytes=1_000_000)
    with pytest.raises(
        ValueError, match=r"in 512,000 bytes, what the rfc9309 profile reads"
    ):
        stringify(document)


def test_content_signals_past_one_lines_length_take_several_lines() -> None:
    # One line of 16,505 bytes read whole, written with ", " between its
    # values: past the 16,663 bytes a reader keeps of a line.
    value = ",".join(f"k{n}=yes" for n in range(1_760))
    document = parse(f"User-agent: *\nContent-Signal: {value}\nDisallow: /x\n")
    text = stringify(document)
    assert text.count("Content-Signal:") == 2
    assert max(len(line.encode()) for line in text.splitlines()) <= 16_663
    assert parse(text).without_lines() == document.without_lines()


def test_license_lines_stay_where_they_apply() -> None:
    # RSL: a License line before every group is global, one in a group its
    # agents' own; all were written after the last group.
    document = parse(
        "License: https://a/global.xml\n"
        "User-agent: a\nDisallow: /x\nLicense: https://a/a.xml\n"
        "User-agent: b\nDisallow: /y\n"
        "User-agent: c\nDisallow: /z\n"
    )
    back = parse(stringify(document))
    for agent in ("a", "b", "c"):
        assert robots_licenses(back, agent) == robots_licenses(document, agent)
    assert robots_licenses(back, "a") == ("https://a/a.xml",)
    assert robots_licenses(back, "c") == ("https://a/global.xml",)
