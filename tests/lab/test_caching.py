"""httpbin's caching in the lab (lab/caching.py; docs/lab.md, "Caching"):
/lab/cache, /lab/cache/{n} and /lab/etag/{etag}, their validators and their
conditional answers (RFC 9110 section 13), in process."""

from __future__ import annotations

import pytest
import webtest
from werkzeug.http import http_date

from tests.helpers import assert_error


@pytest.fixture
def anon(make_app, tmp_path) -> webtest.TestApp:
    return make_app(anonymous=True, data_dir=str(tmp_path))


# /lab/cache


def test_cache_answers_the_reflection_with_last_modified_and_an_etag(anon, clock):
    answer = anon.get("/lab/cache?x=1", headers={"Authorization": "Bearer s3cret"})
    assert answer.json["args"] == {"x": "1"}
    assert answer.json["headers"]["Authorization"] == "[redacted]"
    assert answer.headers["Last-Modified"] == http_date(clock())
    assert answer.headers["ETag"]
    # Kept by caches: what it shows of a credential is redacted (docs/lab.md).
    assert "Cache-Control" not in answer.headers


@pytest.mark.parametrize(
    "condition",
    [{"If-Modified-Since": "Sun, 01 Jan 2000 00:00:00 GMT"},
     {"If-None-Match": '"anything"'}, {"If-None-Match": "*"}],
    ids=["If-Modified-Since", "If-None-Match", "If-None-Match *"],
)  # fmt: skip
def test_cache_takes_any_conditional_request_as_current(anon, clock, condition):
    current = anon.get("/lab/cache", headers=condition, status=304)
    assert current.body == b""
    assert "Content-Type" not in current.headers
    # With the validators a 200 to it would have had (RFC 9110 section 15.4.5).
    assert current.headers["Last-Modified"] == http_date(clock())
    assert current.headers["ETag"]


def test_an_empty_condition_is_no_condition(anon):
    assert anon.get("/lab/cache", headers={"If-None-Match": ""}).status_int == 200


# /lab/cache/{n}


@pytest.mark.parametrize("n", ["0", "60", "31536000"])
def test_cache_n_may_be_kept_n_seconds_by_any_cache(anon, n):
    answer = anon.get(f"/lab/cache/{n}")
    assert answer.headers["Cache-Control"] == f"public, max-age={n}"
    assert answer.json["url"] == f"http://localhost/lab/cache/{n}"
    # Its tag is the router's, of the bytes: a revalidation sends If-None-Match,
    # which the reflection shows, so it is another body (docs/lab.md, "Caching").
    tag = answer.headers["ETag"]
    again = anon.get(f"/lab/cache/{n}", headers={"If-None-Match": tag})
    assert again.status_int == 200 and again.json["headers"]["If-None-Match"] == tag
    assert again.headers["ETag"] != tag


@pytest.mark.parametrize("n", ["-1", "x", "1.5"])
def test_cache_n_that_is_no_whole_number_is_400_or_absent(anon, n):
    answer = anon.get(f"/lab/cache/{n}", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")


# /lab/etag/{etag}


def test_etag_answers_with_the_entity_tag_its_path_names(anon):
    answer = anon.get("/lab/etag/v1.0-abc")
    assert answer.headers["ETag"] == '"v1.0-abc"'
    assert answer.json["url"] == "http://localhost/lab/etag/v1.0-abc"
    assert "Cache-Control" not in answer.headers


@pytest.mark.parametrize(
    "if_none_match", ['"abc"', 'W/"abc"', '"x", "abc"', "*"],
    ids=["it", "it weak", "in a list", "any"],
)  # fmt: skip
def test_if_none_match_listing_it_is_304_compared_weakly(anon, if_none_match):
    current = anon.get("/lab/etag/abc", headers={"If-None-Match": if_none_match},
                       status=304)  # fmt: skip
    assert current.body == b"" and current.headers["ETag"] == '"abc"'


@pytest.mark.parametrize("if_match", ['"abc"', '"x", "abc"', "*"])
def test_if_match_listing_it_is_the_answer(anon, if_match):
    answer = anon.get("/lab/etag/abc", headers={"If-Match": if_match})
    assert answer.status_int == 200 and answer.headers["ETag"] == '"abc"'


@pytest.mark.parametrize(
    "if_match", ['"x"', 'W/"abc"', ""], ids=["another", "it weak", "empty"]
)
def test_if_match_not_listing_it_is_412_compared_strongly(anon, if_match):
    refused = anon.get("/lab/etag/abc", headers={"If-Match": if_match}, status=412)
    assert_error(refused, 412, "PRECONDITION_FAILED")
    assert refused.json["details"] == {"etag": '"abc"'}


def test_if_match_is_judged_before_if_none_match(anon):
    """RFC 9110 section 13.2.2: a false If-Match is 412 whatever If-None-Match says;
    a true one leaves If-None-Match to say 304."""
    both = {"If-Match": '"x"', "If-None-Match": '"abc"'}
    anon.get("/lab/etag/abc", headers=both, status=412)
    both["If-Match"] = '"abc"'
    anon.get("/lab/etag/abc", headers=both, status=304)


@pytest.mark.parametrize("etag", ["a%22b", "a%20b", "%C3%A9", "x" * 257])
def test_an_etag_that_no_entity_tag_can_hold_is_400(anon, etag):
    answer = anon.get(f"/lab/etag/{etag}", expect_errors=True)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"][0]["field"] == "etag"
