"""The lab's slow and streamed answers (lab/slow.py; docs/lab.md, "Delays" and
"Streams"), in process: the sleep moves the test's clock, so nothing waits; each
bound clamps, as httpbin's do, and slow work holds a slot until the answer is
closed. tests/e2e/test_lab.py runs them under gunicorn."""

from __future__ import annotations

import json

import pytest
import webtest

from refapi.app import create_app
from refapi.web.keys import via_pseudonym
from tests.helpers import assert_error


def test_a_stream_is_n_json_lines_each_a_reflection_with_its_id(anon):
    answer = anon.get("/lab/stream/3?q=1", headers={"X-Lesson": "one"})
    assert answer.content_type == "application/x-ndjson"
    lines = [json.loads(line) for line in answer.body.splitlines()]
    assert [line["id"] for line in lines] == [0, 1, 2]
    assert {line["args"]["q"] for line in lines} == {"1"}
    assert lines[0]["headers"]["X-Lesson"] == "one"
    # Written as made: no ETag (tests/e2e/test_lab.py: chunked under gunicorn).
    assert "ETag" not in answer.headers
    assert answer.headers["Cache-Control"] == "no-store"


def test_a_stream_longer_than_the_most_is_clamped(anon):
    assert len(anon.get("/lab/stream/1000").body.splitlines()) == 100
    # None asked is none sent, as httpbin's (it was a 400); below none is refused.
    assert anon.get("/lab/stream/0", status=200).body == b""
    assert_error(anon.get("/lab/stream/-1", status=400), 400, "VALIDATION_ERROR")


def test_a_stream_s_lines_stop_within_the_lab_s_most_bytes(anon):
    """Each line holds the request's head: a large head cannot buy an answer a
    hundred times its size (a client that does not read held a Granian thread
    with it for ever)."""
    pad = {f"X-Pad-{i}": "a" * 4000 for i in range(4)}  # 16 KB a line
    lines = anon.get("/lab/stream/100", headers=pad).body.splitlines(keepends=True)
    assert len(lines) == 102_400 // len(lines[0])  # REFAPI_LAB_MAX_BYTES' default
    assert [json.loads(line)["id"] for line in lines] == list(range(len(lines)))
    huge = {f"X-Pad-{i}": "a" * 8000 for i in range(16)}  # 128 KB: one line
    assert len(anon.get("/lab/stream/100", headers=huge).body.splitlines()) == 1


def _chunks(app: webtest.TestApp, path: str) -> list[int]:
    """The sizes of the writes the lab hands the server for ``path``."""
    environ = webtest.TestRequest.blank(path).environ
    answer = app.app(environ, lambda status, headers, exc_info=None: None)
    try:
        return [len(chunk) for chunk in answer if chunk]
    finally:
        getattr(answer, "close", lambda: None)()


def test_a_byte_stream_is_the_bytes_of_its_seed_in_chunks_as_asked(anon):
    answer = anon.get("/lab/stream-bytes/25000?seed=7")
    assert answer.body == anon.get("/lab/bytes/25000?seed=7").body
    assert answer.content_type == "application/octet-stream"
    assert "ETag" not in answer.headers
    assert answer.headers["Cache-Control"] == "no-store"
    assert _chunks(anon, "/lab/stream-bytes/25000?seed=7") == [10240, 10240, 4520]
    assert _chunks(anon, "/lab/stream-bytes/10?chunk_size=3") == [3, 3, 3, 1]
    unseeded = anon.get("/lab/stream-bytes/64").body
    assert len(unseeded) == 64 and unseeded != anon.get("/lab/stream-bytes/64").body
    assert anon.get("/lab/stream-bytes/0").body == b""


def test_a_byte_stream_writes_a_thousand_chunks_at_most_and_clamps(make_app, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path))
    assert _chunks(app, "/lab/stream-bytes/100000?chunk_size=1") == [100] * 1000
    small = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_bytes=10)
    assert len(small.get("/lab/stream-bytes/99?chunk_size=4").body) == 10
    for query, field in (("chunk_size=0", "chunk_size"), ("seed=0", "seed"),
                         ("chunk_size=x", "chunk_size")):  # fmt: skip
        refused = app.get(f"/lab/stream-bytes/8?{query}", status=400)
        assert_error(refused, 400, "VALIDATION_ERROR")
        assert refused.json["details"]["errors"][0]["field"] == field


def test_a_drip_waits_then_spreads_its_bytes_over_the_duration(anon, clock):
    started = clock()
    answer = anon.get("/lab/drip?duration=2&numbytes=4&delay=1&code=202")
    assert answer.status_int == 202
    assert answer.body == b"****"
    assert answer.headers["Content-Length"] == "4"
    assert answer.content_type == "application/octet-stream"
    # The delay, then three pauses between four writes of a byte.
    assert clock() - started == pytest.approx(1 + 3 * 0.5, abs=1e-3)


def test_a_drip_of_many_bytes_writes_a_thousand_times_at_most(anon, clock):
    started = clock()
    answer = anon.get("/lab/drip?duration=1&numbytes=100000")
    assert answer.body == b"*" * 100000
    assert clock() - started == pytest.approx(999 / 1000, abs=1e-3)


def test_a_drip_past_the_bounds_is_clamped(make_app, clock, tmp_path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), lab_max_delay=3,
                   lab_max_bytes=10)  # fmt: skip
    started = clock()
    answer = app.get("/lab/drip?duration=60&delay=2&numbytes=99")
    assert answer.body == b"*" * 10
    # 2 s, then 1 s over the bytes: nine pauses of a tenth between ten writes.
    assert clock() - started == pytest.approx(2.9, abs=1e-3)


@pytest.mark.parametrize(
    ("query", "field"),
    [("code=204", "code"), ("code=500", "code"), ("code=x", "code"),
     ("numbytes=0", "numbytes"), ("duration=-1", "duration"), ("delay=soon", "delay")],
)  # fmt: skip
def test_a_drip_asked_wrong_is_400_on_the_field(anon, query, field):
    answer = anon.get(f"/lab/drip?{query}", status=400)
    assert answer.json["details"]["errors"][0]["field"] == field


def test_events_are_sent_delay_apart_with_ids(anon, clock):
    started = clock()
    answer = anon.get("/lab/sse?count=3&delay=0.5")
    assert answer.content_type == "text/event-stream"
    assert answer.text == (
        "retry: 1000\n\n"
        'id: 1\nevent: tick\ndata: {"id": 1, "count": 3}\n\n'
        'id: 2\nevent: tick\ndata: {"id": 2, "count": 3}\n\n'
        'id: 3\nevent: tick\ndata: {"id": 3, "count": 3}\n\n'
    )
    assert clock() - started == 1
    assert answer.headers["Cache-Control"] == "no-store"


def test_events_resume_after_the_last_event_id_and_stop_with_204(anon):
    answer = anon.get("/lab/sse?count=3&delay=0", headers={"Last-Event-ID": "2"})
    assert answer.text.count("id: ") == 1 and "id: 3\n" in answer.text
    done = anon.get("/lab/sse?count=3", headers={"Last-Event-ID": "3"}, status=204)
    assert done.body == b""
    # None, or none sent yet: from the first; an id past every one: none left.
    again = anon.get("/lab/sse?count=2&delay=0", headers={"Last-Event-ID": ""})
    assert again.text.count("id: ") == 2
    far = "0" * 5000 + "9" * 5000
    anon.get("/lab/sse?count=2", headers={"Last-Event-ID": far}, status=204)
    wrong = anon.get("/lab/sse", headers={"Last-Event-ID": "x"}, status=400)
    assert wrong.json["details"]["errors"][0]["field"] == "Last-Event-ID"


def test_events_are_spread_over_the_most_at_most(anon, clock):
    started = clock()
    answer = anon.get("/lab/sse?count=1000&delay=60")
    assert answer.text.count("event: tick") == 100
    assert clock() - started == pytest.approx(5, abs=1e-3)


def test_a_delay_reflects_the_request_and_says_the_seconds(anon):
    answer = anon.get("/lab/delay/1?q=1", headers={"X-Lesson": "one"})
    assert answer.json["args"] == {"q": "1"}
    assert answer.json["headers"]["X-Lesson"] == "one"
    assert answer.json["seconds"] == 1
    assert answer.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("path", ["/lab/drip?delay=1", "/lab/sse?count=2"])
def test_slow_streams_hold_a_slot_until_closed(make_app, tmp_path, path):
    # Two slots, one of them for slow work (slots.py).
    app = make_app(anonymous=True, data_dir=str(tmp_path), workers=2, threads=1)
    environ = webtest.TestRequest.blank(path).environ
    answer = app.app(environ, lambda status, headers, exc_info=None: None)
    assert_error(app.get("/lab/delay/1", status="*"), 429, "RATE_LIMITED")
    b"".join(answer)
    answer.close()
    assert app.get("/lab/delay/1").json["seconds"] == 1


@pytest.mark.parametrize(
    "path", ["/lab/sse?count=2&delay=0", "/lab/drip?duration=0&numbytes=1"]
)
def test_a_stream_without_a_wait_holds_no_slot(make_app, tmp_path, path):
    app = make_app(anonymous=True, data_dir=str(tmp_path), workers=2, threads=1)
    environ = webtest.TestRequest.blank(path).environ
    answer = app.app(environ, lambda status, headers, exc_info=None: None)
    assert app.get("/lab/delay/1").json["seconds"] == 1
    answer.close()


def test_a_drip_that_waits_for_nothing_takes_no_delay_token(anon):
    # Ten delays a minute; a drip of no wait passed that bucket, and the 11th was 429.
    for _ in range(12):
        anon.get("/lab/drip?duration=0&numbytes=1", status=200)
    anon.get("/lab/delay/0", status=200)  # the bucket is still whole


@pytest.mark.parametrize("path", ["/lab/drip", "/lab/sse"])
def test_slow_streams_through_this_service_s_proxy_are_508(anon, config, store, path):
    ours = via_pseudonym(config, store)
    refused = anon.get(path, headers={"Via": f"1.1 {ours}"}, status=508)
    assert_error(refused, 508, "LOOP_DETECTED")
    # Another proxy's: served.
    assert anon.get(path, headers={"Via": "1.1 cache.example"}).status_int == 200


def test_head_of_a_stream_sends_no_body(anon, clock):
    started = clock()
    answer = anon.head("/lab/drip?duration=1&numbytes=5")
    assert answer.body == b"" and answer.headers["Content-Length"] == "5"
    assert clock() - started == 0  # the drip was never run


def test_the_lab_s_front_lists_its_paths_under_the_mount_point(anon):
    front = anon.get("/lab", extra_environ={"SCRIPT_NAME": "/v"}).json
    assert front["document"] == "/v/lab/openapi.json"
    assert front["paths"][:2] == ["/v/lab", "/v/lab/anything"]
    assert "/v/lab/sse" in front["paths"] and "/v/v1/articles" not in front["paths"]
    moved = anon.get("/lab/?x=1", status=308)
    assert moved.headers["Location"] == "/lab?x=1"


def test_a_sleep_that_overshoots_delays_no_later_write(config, store, clock):
    """A busy host wakes a sleep late: each write is due from the start, so the
    drip and the events still end within their bound, whole (a drip of a thousand
    late sleeps was cut short under two suites at once)."""

    def late(seconds: float) -> None:
        clock.advance(seconds + 0.004 if seconds > 0 else 0)  # each 4 ms late

    app = webtest.TestApp(create_app(config, store=store, clock=clock, sleep=late))
    started = clock()
    drip = app.get("/lab/drip?duration=2&numbytes=1000")
    assert drip.body == b"*" * 1000
    assert clock() - started < 2 + 1
    events = app.get("/lab/sse?count=100&delay=0.02")
    assert events.text.count("event: tick") == 100
