"""httpbin's bodies in the lab (lab/bodies.py; docs/lab.md, "Bodies"): the coded
reflections, the fixed documents, base64 decoded, random bytes and pages of links,
in process. A coded body is read as sent (``as_sent``: WebTest decodes gzip and
deflate itself and refuses br) and decoded here, by the standard library and
Google's brotli."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from xml.etree import ElementTree

import brotli
import pytest
import webtest

from refapi.lab import bodies
from tests.helpers import as_sent, assert_error

DECODE = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}
CODED = [("gzip", "gzip", "gzipped"), ("deflate", "deflate", "deflated"),
         ("brotli", "br", "brotli")]  # fmt: skip


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    return make_app(anonymous=True, data_dir=str(tmp_path))


# Coded


@pytest.mark.parametrize(("path", "coding", "member"), CODED)
def test_a_coded_body_decodes_to_the_reflection_with_its_flag(
    anon, path, coding, member
):
    answer = as_sent(anon, f"/lab/{path}?x=1", {"Authorization": "Bearer s3cret"})
    assert answer.status_code == 200
    assert answer.headers["Content-Encoding"] == coding
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert answer.headers["Cache-Control"] == "no-store"  # it shows the headers sent
    assert answer.data[:1] != b"{"  # coded, not JSON as it stands
    shown = json.loads(DECODE[coding](answer.data))
    assert list(shown) == [
        "args", "headers", "method", "origin", "url", "credentials", member,
    ]  # fmt: skip
    assert shown[member] is True and shown["args"] == {"x": "1"}
    assert shown["method"] == "GET" and shown["credentials"] == ["bearer"]
    assert shown["headers"]["Authorization"] == "[redacted]"
    assert b"s3cret" not in DECODE[coding](answer.data)


@pytest.mark.parametrize(("path", "coding", "member"), CODED)
def test_the_coding_is_sent_whatever_accept_encoding_says(anon, path, coding, member):
    answer = as_sent(anon, f"/lab/{path}", {"Accept-Encoding": "identity"})
    assert answer.headers["Content-Encoding"] == coding
    assert json.loads(DECODE[coding](answer.data))[member] is True


def test_a_coded_body_has_its_tag_and_its_head_no_body(anon):
    sent = as_sent(anon, "/lab/gzip", {"If-None-Match": '"another"'})
    again = as_sent(anon, "/lab/gzip", {"If-None-Match": '"another"'})
    assert sent.headers["ETag"] == again.headers["ETag"]  # coded the same: mtime 0
    head = as_sent(anon, "/lab/gzip", method="HEAD")
    assert head.data == b"" and head.headers["Content-Encoding"] == "gzip"
    assert int(head.headers["Content-Length"]) > 0  # a HEAD's reflection's length


# Fixed


FIXED = {
    "/lab/html": "text/html; charset=utf-8",
    "/lab/encoding/utf8": "text/html; charset=utf-8",
    "/lab/xml": "application/xml",
    "/lab/robots.txt": "text/plain; charset=utf-8",
    "/lab/deny": "text/plain; charset=utf-8",
    "/lab/json": "application/json; charset=utf-8",
}


@pytest.mark.parametrize(("path", "content_type"), FIXED.items())
def test_a_fixed_document_is_the_same_every_time_and_revalidates(
    anon, path, content_type
):
    first = anon.get(path)
    assert first.headers["Content-Type"] == content_type
    assert "Cache-Control" not in first.headers
    assert anon.get(path).body == first.body
    again = anon.get(path, headers={"If-None-Match": first.headers["ETag"]}, status=304)
    assert again.body == b""


def test_the_utf8_page_is_utf8_in_many_scripts(anon):
    text = anon.get("/lab/encoding/utf8").body.decode("utf-8")
    for sample in ("Καλημέρα", "おはようございます", "صباح الخير", "😀"):
        assert sample in text
    assert any(len(char.encode()) == 4 for char in text)  # beyond the BMP too


def test_json_and_xml_are_one_slide_show_in_httpbin_s_shape(anon):
    shown = anon.get("/lab/json").json["slideshow"]
    assert set(shown) == {"author", "date", "slides", "title"}
    root = ElementTree.fromstring(anon.get("/lab/xml").body)
    assert root.tag == "slideshow"
    assert {name: root.get(name) for name in ("author", "date", "title")} == {
        name: shown[name] for name in ("author", "date", "title")
    }
    titles = [slide.findtext("title") for slide in root.iter("slide")]
    assert titles == [slide["title"] for slide in shown["slides"]]


def test_robots_txt_disallows_deny_under_the_mount_point(anon):
    robots = anon.get("/lab/robots.txt", extra_environ={"SCRIPT_NAME": "/prod"})
    assert robots.text == "User-agent: *\nDisallow: /prod/lab/deny\n"
    assert anon.get("/lab/deny").text.strip()


# Base64


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("SFRUUEJJTiBpcyBhd2Vzb21l", "HTTPBIN is awesome"),
        ("aGk", "hi"),  # no padding
        ("aGk=", "hi"),  # padding
        ("aGk_", "hi?"),  # URL-safe: _ for /
        ("w6k-", "é>"),  # and - for +
        ("_w", "\ufffd"),  # not UTF-8: U+FFFD, as its charset says
    ],
)
def test_base64_is_decoded_as_plain_text(anon, value, text):
    answer = anon.get(f"/lab/base64/{value}")
    assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.body.decode("utf-8") == text


def test_base64_of_markup_is_served_as_plain_text_never_html(anon):
    value = "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg"  # <script>alert(1)</script>
    answer = anon.get(f"/lab/base64/{value}", headers={"Accept": "text/html"})
    assert answer.body == b"<script>alert(1)</script>"
    assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "value",
    ["a!b=", "A", "aGk==", "aG=k", "a+bc", "a%20bc", "aGk==x",
     "A" * (bodies.BASE64_MAX + 4)],
)  # fmt: skip
def test_what_is_not_url_safe_base64_is_400_on_value(anon, value):
    answer = anon.get(f"/lab/base64/{value}", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "value"


# Bytes


def test_bytes_are_n_random_ones_new_each_time(anon):
    first, second = anon.get("/lab/bytes/64"), anon.get("/lab/bytes/64")
    assert first.headers["Content-Type"] == "application/octet-stream"
    assert first.headers["Cache-Control"] == "no-store"
    assert len(first.body) == len(second.body) == 64
    assert first.body != second.body
    assert anon.get("/lab/bytes/0").body == b""


def test_a_seed_gives_the_same_bytes_twice_and_another_seed_others(anon):
    one = anon.get("/lab/bytes/32?seed=1").body
    assert anon.get("/lab/bytes/32?seed=1").body == one
    assert anon.get("/lab/bytes/32?seed=2").body != one
    # The same on any host and any Python: Python's Mersenne Twister, seeded.
    assert one.hex()[:16] == "f5b165224a58b791"


@pytest.mark.parametrize("seed", ["0", "x", "-1", str(2**63)])
def test_a_seed_that_is_no_positive_integer_is_400(anon, seed):
    answer = anon.get(f"/lab/bytes/8?seed={seed}", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "seed"


def test_more_bytes_than_the_most_are_clamped_to_it(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_bytes=100)
    assert len(app.get("/lab/bytes/101").body) == 100
    assert len(app.get(f"/lab/bytes/{2**63 - 1}?seed=3").body) == 100
    default = make_app(anonymous=True, data_dir=str(tmp_path))
    assert len(default.get("/lab/bytes/999999").body) == 102_400  # httpbin's cap


# Links


def hrefs(page: str) -> list[str]:
    return re.findall(r'<a href="([^"]*)">', page)


def test_a_page_of_links_names_its_siblings_under_the_mount_point(anon):
    page = anon.get("/lab/links/4/1", extra_environ={"SCRIPT_NAME": "/prod"})
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert hrefs(page.text) == [
        "/prod/lab/links/4/0", "/prod/lab/links/4/2", "/prod/lab/links/4/3",
    ]  # fmt: skip
    assert "> 1 <" in page.text  # the current page: its number alone
    assert len(hrefs(anon.get("/lab/links/4/0").text)) == 3
    assert len(hrefs(anon.get("/lab/links/4/9").text)) == 4  # none is current


def test_more_links_than_200_are_clamped_and_none_is_refused(anon):
    links = hrefs(anon.get("/lab/links/5000/0").text)
    assert len(links) == bodies.MAX_LINKS - 1
    assert links[-1] == "/lab/links/200/199"
    assert_error(anon.get("/lab/links/0/0", expect_errors=True), 400,
                 "VALIDATION_ERROR")  # fmt: skip


# Never HTML by the client's say


@pytest.mark.parametrize(
    "path",
    ["/lab/base64/PGI-", "/lab/bytes/8", "/lab/gzip", "/lab/robots.txt", "/lab/deny",
     "/lab/xml", "/lab/json", "/lab/range/8", "/lab/cache"],
)  # fmt: skip
def test_a_hostile_content_type_or_accept_never_makes_an_answer_html(anon, path):
    """What the client names (an Accept, a Content-Type, markup in the query) never
    decides a type: only the row's does (docs/lab.md, "Bodies")."""
    hostile = {"Accept": "text/html", "Content-Type": "text/html"}
    answer = as_sent(anon, f"{path}?content-type=text/html&x=<b>", hostile)
    assert not answer.headers["Content-Type"].startswith("text/html")
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


def test_the_html_pages_hold_nothing_of_the_request(anon):
    for path in ("/lab/html", "/lab/encoding/utf8", "/lab/links/3/0"):
        page = anon.get(f"{path}?x=<script>alert(1)</script>")
        assert "<script>" not in page.text and "alert" not in page.text
