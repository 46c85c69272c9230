"""``python -O`` changes nothing: the guards are ``if`` statements, not ``assert``.

The router refuses a caller without a credential before a handler runs; the handlers
that act for a principal refuse one all the same if a route table sends them a
request without it. Run in a subprocess under ``-O`` and without, through WebTest,
with the guarded handlers mounted without the router's check.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import dataclasses, json, sys, time
import webtest
from refapi import routes
from refapi.router import Router
from refapi.config import Config
from refapi.middleware import Errors
from refapi.storage import open_store

url = sys.argv[1]
store = open_store(url)
calls = [
    ("POST", "/v1/articles", {"title": "x"}, "create_article"),
    ("PATCH", "/v1/articles/1", {"title": "x"}, "update_article"),
    ("DELETE", "/api/users/1", None, "delete_user"),
    ("POST", "/v1/payments", {"amount": 1, "currency": "EUR"}, "create_payment"),
    ("POST", "/api/keys", {"name": "k"}, "create_api_key"),
]
names = {name for *_, name in calls}
rows = tuple(dataclasses.replace(row, auth=None)
             for row in routes.ROUTES if row.name in names)
router = Router(Config(database_url=url, secret_key=b"k"), store, time.time,
                lambda now: "pay_1", route_table=rows)
app = webtest.TestApp(Errors(router))
statuses = [
    app.request(path, method=method, body=json.dumps(body).encode() if body else b"",
                content_type="application/json", expect_errors=True,
                headers={"Idempotency-Key": "k"}).status_int
    for method, path, body, _ in calls
]
print(json.dumps(statuses))
"""


def statuses(tmp_path, *flags: str) -> list[int]:
    url = f"sqlite:///{tmp_path}/refapi-{len(flags)}.db"
    done = subprocess.run(
        [sys.executable, *flags, "-c", SCRIPT, url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_a_handler_reached_without_a_principal_refuses_it_under_python_O(tmp_path):
    assert statuses(tmp_path, "-O") == [401] * 5
    assert statuses(tmp_path) == [401] * 5
