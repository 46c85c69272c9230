"""The lab over gunicorn: delays are slow work, which holds at most all but one of
the host's slots, across its workers.

``simultaneous`` puts four delays in flight at once on three sync workers: two
hold the host's share of slow work and wait; the others are refused at once,
without a worker tied up for them (docs/lab.md, "Delays").
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import exchange, raw_request, simultaneous

pytestmark = pytest.mark.e2e


def test_delays_beyond_the_hosts_share_are_refused_at_once_across_workers(gunicorn):
    server = gunicorn(workers=3, env={"REFAPI_LAB_MAX_DELAY": "2"})
    request = raw_request("GET", "/api/delay/2")
    answers = simultaneous(server, [request] * 4, admin=False)
    statuses = sorted(answer.status for answer in answers)
    assert statuses == [200, 200, 429, 429]
    for answer in answers:
        body = json.loads(answer.body)
        if answer.status == 200:
            assert body == {"seconds": 2}
            continue
        assert body["code"] == "RATE_LIMITED"
        retry_after = int(answer.getheader("Retry-After"))
        assert 1 <= retry_after <= 2 and body["details"]["retry_after"] == retry_after
    # The slots were let go when the delays ended: the next one is served.
    again = exchange(server, raw_request("GET", "/api/delay/0"), admin=False)
    assert again.status == 200


def test_the_echo_shows_the_headers_as_gunicorn_handed_them(gunicorn):
    server = gunicorn(workers=1)
    raw = raw_request(
        "POST", "/api/echo?x=1",
        {"x-lower-case": "kept", "X-API-Key": "never-shown", "Content-Type": "a/b"},
        b"body",
    )  # fmt: skip
    answer = exchange(server, raw, admin=False)
    assert answer.status == 200
    echo = json.loads(answer.body)
    assert {"name": "X-Lower-Case", "value": "kept"} in echo["headers"]
    assert {"name": "X-Api-Key", "value": "[redacted]"} in echo["headers"]
    assert b"never-shown" not in answer.body
    assert (echo["body"], echo["client"], echo["credentials"]) == (
        "body", "127.0.0.1", ["api_key"],
    )  # fmt: skip
