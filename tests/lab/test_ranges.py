"""httpbin's range in the lab (lab/ranges.py; docs/lab.md, "Ranges"): a body of
the alphabet repeated, fetched whole or in one part (RFC 9110 section 14), with
If-Range and If-None-Match, in process."""

from __future__ import annotations

import string

import pytest
import webtest

from tests.helpers import assert_error

ALPHABET = string.ascii_lowercase.encode()
OCTETS = "application/octet-stream"


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    return make_app(anonymous=True, data_dir=str(tmp_path))


def ranged(app, range_, n=26, status=206, **headers) -> webtest.TestResponse:
    return app.get(f"/lab/range/{n}", headers={"Range": range_, **headers},
                   status=status)  # fmt: skip


def test_without_a_range_the_whole_body_says_it_takes_ranges(anon):
    whole = anon.get("/lab/range/30")
    assert whole.body == ALPHABET + b"abcd"
    assert whole.headers["Content-Type"] == OCTETS
    assert whole.headers["Accept-Ranges"] == "bytes"
    assert whole.headers["ETag"]
    assert "Content-Range" not in whole.headers
    assert "Cache-Control" not in whole.headers  # the same every time
    assert anon.get("/lab/range/30").headers["ETag"] == whole.headers["ETag"]


@pytest.mark.parametrize(
    ("range_", "part", "content_range"),
    [
        ("bytes=0-9", b"abcdefghij", "bytes 0-9/26"),  # the first ten
        ("bytes=10-12", b"klm", "bytes 10-12/26"),
        ("bytes=20-", b"uvwxyz", "bytes 20-25/26"),  # from a byte to the end
        ("bytes=-3", b"xyz", "bytes 23-25/26"),  # the last three
        ("bytes=24-99", b"yz", "bytes 24-25/26"),  # a last byte past the end
        ("bytes=-99", ALPHABET, "bytes 0-25/26"),  # a suffix past the start
        ("bytes=25-25", b"z", "bytes 25-25/26"),
        ("Bytes=0-0", b"a", "bytes 0-0/26"),  # the unit in any case
    ],
)
def test_one_range_is_206_with_those_bytes_and_content_range(
    anon, range_, part, content_range
):
    answer = ranged(anon, range_)
    assert answer.body == part
    assert answer.headers["Content-Range"] == content_range
    assert answer.headers["Content-Length"] == str(len(part))
    assert answer.headers["Content-Type"] == OCTETS
    assert answer.headers["Accept-Ranges"] == "bytes"
    # The tag is the whole body's, as a 200 sends it: the parts are of one body.
    assert answer.headers["ETag"] == anon.get("/lab/range/26").headers["ETag"]


# A suffix of no bytes too: valid, and unsatisfiable (RFC 9110 section 14.1.1).
@pytest.mark.parametrize("range_", ["bytes=26-", "bytes=100-200", "bytes=-0"])
def test_a_range_that_holds_no_byte_is_416_with_the_length(anon, range_):
    answer = ranged(anon, range_, status=416)
    assert_error(answer, 416, "RANGE_NOT_SATISFIABLE")
    assert answer.headers["Content-Range"] == "bytes */26"
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert answer.json["details"] == {"length": 26}


@pytest.mark.parametrize(
    "range_",
    ["bytes=0-1,4-5", "bytes=-1,0-0", "items=0-1", "bytes=x-y", "bytes=5-2", "0-1",
     "bytes=-", ""],
    ids=["several", "several with a suffix", "another unit", "not numbers",
         "backwards", "no unit", "an empty suffix", "empty"],
)  # fmt: skip
def test_several_ranges_another_unit_or_none_at_all_get_the_whole_body(anon, range_):
    """Ignored, as RFC 9110 section 14.2 allows (several are never multipart)."""
    answer = ranged(anon, range_, status=200)
    assert answer.body == ALPHABET
    assert "Content-Range" not in answer.headers


def test_if_range_naming_the_body_s_tag_keeps_the_range(anon):
    etag = anon.get("/lab/range/26").headers["ETag"]
    assert ranged(anon, "bytes=0-1", **{"If-Range": etag}).body == b"ab"


@pytest.mark.parametrize(
    "if_range",
    ['"another"', "W/{etag}", "Sun, 29 Nov 2026 00:00:00 GMT", "{etag}x"],
    ids=["another tag", "the tag weak", "a date", "not a tag"],
)
def test_if_range_naming_anything_else_gets_the_whole_body(anon, if_range):
    """If-Range compares strongly, and the body has no Last-Modified for a date to
    match (RFC 9110 section 13.1.5): the part held is of another body."""
    etag = anon.get("/lab/range/26").headers["ETag"]
    whole = ranged(anon, "bytes=0-1", status=200,
                   **{"If-Range": if_range.format(etag=etag)})  # fmt: skip
    assert whole.body == ALPHABET


def test_if_range_without_a_range_is_ignored(anon):
    answer = anon.get("/lab/range/26", headers={"If-Range": '"another"'})
    assert answer.body == ALPHABET


def test_a_current_copy_is_304_before_the_range_is_read(anon):
    """If-None-Match is evaluated before Range (RFC 9110 section 13.2.2)."""
    etag = anon.get("/lab/range/26").headers["ETag"]
    current = ranged(anon, "bytes=0-1", status=304, **{"If-None-Match": etag})
    assert current.body == b"" and current.headers["ETag"] == etag
    stale = ranged(anon, "bytes=0-1", **{"If-None-Match": '"another"'})
    assert stale.body == b"ab"


def test_a_head_ignores_the_range(anon):
    """Only GET defines ranges (RFC 9110 section 14.2)."""
    head = anon.head("/lab/range/26", headers={"Range": "bytes=0-1"}, status=200)
    assert head.body == b"" and head.headers["Content-Length"] == "26"


def test_the_body_is_clamped_to_the_most_and_none_is_refused(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_bytes=30)
    assert len(app.get("/lab/range/1000").body) == 30
    assert ranged(app, "bytes=-2", n=1000).headers["Content-Range"] == "bytes 28-29/30"
    refused = app.get("/lab/range/0", expect_errors=True)
    assert_error(refused, 400, "VALIDATION_ERROR")


def test_the_explainer_says_what_each_field_of_a_part_means(anon):
    form = {
        "method": "GET",
        "path": "/lab/range/26",
        "headers": [["Range", "bytes=0-1"]],
    }
    answer = anon.post_json("/lab/explain", form).json
    assert answer["response"]["status"] == 206
    specs = {(a["part"], a["name"]): a["spec"] for a in answer["annotations"]}
    assert specs[("status", "206")] == "RFC 9110 section 15.3.7"
    assert specs[("request", "Range")] == "RFC 9110 section 14.2"
    assert specs[("response", "Content-Range")] == "RFC 9110 section 14.4"
    assert specs[("response", "Accept-Ranges")] == "RFC 9110 section 14.3"
