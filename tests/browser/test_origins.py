"""Requests from elsewhere, in a real browser: a forged request on the session's
authority is refused, and a page of another origin calls the API with a credential
header through a real CORS preflight.

The second origin is a tiny server on another loopback port: another origin, but
the same site (127.0.0.1), so the browser sends the ``SameSite=Lax`` session cookie
with its requests, and only the CSRF token and the ``Origin`` check stand in the way.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
import urllib3
from playwright.sync_api import expect

from refapi.web.auth import FOREIGN_ORIGIN
from tests.conftest import ADMIN

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

CSRF_FAILED = {
    "code": "CSRF_FAILED",
    "message": "A request made with the session cookie needs a valid X-CSRF-Token.",
    "details": {},
}
# A page of the second origin whose script calls the URL its fragment names, with
# the headers named there, and writes what came back into the page.
CALLER_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>caller</title>
<script type="module" src="/caller.js"></script></head>
<body><pre id="result"></pre></body></html>
"""
CALLER_JS = """
const { url, headers } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
const result = document.getElementById("result");
fetch(url, { headers }).then(
  async (response) => {
    result.textContent = JSON.stringify({
      status: response.status,
      body: await response.json(),
      requestId: response.headers.get("X-Request-Id"),
    });
  },
  (error) => { result.textContent = JSON.stringify({ error: String(error) }); },
);
"""


def test_a_request_from_the_page_without_the_csrf_token_is_refused(tab, register):
    victim = register("victim@example.com")
    tab.log_in(ADMIN["email"], ADMIN["password"])
    path = f"/api/users/{victim['id']}"
    # What a script injected into the page could send: the cookie goes along.
    assert tab.call("DELETE", path) == {"status": 403, "body": CSRF_FAILED}
    guessed = tab.call("DELETE", path, {"X-CSRF-Token": "guessed"})
    assert guessed == {"status": 403, "body": CSRF_FAILED}
    assert tab.call("GET", path)["status"] == 200  # still there
    # The same request with the session's token: the token was all that was missing.
    token = tab.call("GET", "/api/session")["body"]["csrfToken"]
    assert tab.call("DELETE", path, {"X-CSRF-Token": token})["status"] == 204
    assert tab.problems == []


@pytest.mark.fresh_server  # counts every refused logout in the log
def test_a_page_of_another_origin_cannot_act_on_the_session(tab, second_origin):
    page, server = tab.page, tab.server
    tab.log_in(ADMIN["email"], ADMIN["password"])
    logout = server.url("/prod/api/logout")
    second_origin.pages["/prize.html"] = (
        "text/html; charset=utf-8",
        f'<!DOCTYPE html><title>prize</title><form method="post" action="{logout}">'
        "<button>Claim your prize</button></form>",
    )
    page.goto(second_origin.base_url + "/prize.html")
    # A script there may send the cookie too, but cannot read the answer.
    page.evaluate(
        "url => fetch(url, {method: 'POST', mode: 'no-cors', credentials: 'include'})",
        logout,
    )
    with page.expect_response(logout) as answer:
        page.get_by_role("button", name="Claim your prize").click()
    # 403, not 401: the cookie came along, and was refused, for its Origin.
    assert answer.value.status == 403
    assert answer.value.json() == {**CSRF_FAILED, "message": FOREIGN_ORIGIN}
    assert server.answered("POST", "/prod/api/logout", 403) == 2
    tab.open_ui()  # the login was not ended
    expect(page.locator("#who")).to_contain_text(f"Logged in as {ADMIN['email']}")


def call_from(page, second_origin, url: str, headers: dict[str, str]) -> dict:
    second_origin.pages["/caller.html"] = ("text/html; charset=utf-8", CALLER_HTML)
    second_origin.pages["/caller.js"] = ("text/javascript", CALLER_JS)
    fragment = quote(json.dumps({"url": url, "headers": headers}))
    page.goto(f"{second_origin.base_url}/caller.html#{fragment}")
    result = page.locator("#result")
    expect(result).not_to_be_empty()
    return json.loads(result.text_content() or "")


def test_a_page_of_another_origin_calls_with_a_bearer_token(tab, second_origin):
    server = tab.server
    # What other tests of the module asked of the shared server.
    asked = server.answered("OPTIONS", "/prod/api/users", 204)
    listed = server.answered("GET", "/prod/api/users", 200)
    url = server.url("/prod/api/users?limit=1")
    found = call_from(
        tab.page, second_origin, url, {"Authorization": server.authorization}
    )
    assert found["status"] == 200, found
    assert [user["email"] for user in found["body"]["data"]] == [ADMIN["email"]]
    assert found["requestId"]  # an exposed header: the script may read it
    # Authorization is not a CORS-safelisted header: the browser asked first.
    assert server.answered("OPTIONS", "/prod/api/users", 204) - asked >= 1
    assert server.answered("GET", "/prod/api/users", 200) - listed >= 1


@pytest.mark.fresh_server  # the list holds the admin alone
def test_a_page_of_another_origin_calls_with_an_api_key(tab, second_origin):
    server = tab.server
    made = urllib3.request(
        "POST", server.url("/prod/api/keys"), json={"name": "second origin"},
        headers={"Authorization": server.authorization}, retries=False,
    )  # fmt: skip
    assert made.status == 201, made.data
    url = server.url("/prod/api/users?limit=2")
    found = call_from(tab.page, second_origin, url, {"X-API-Key": made.json()["key"]})
    assert found["status"] == 200, found
    assert [user["email"] for user in found["body"]["data"]] == [ADMIN["email"]]
    # X-API-Key is not CORS-safelisted either: the browser asked first.
    assert server.answered("OPTIONS", "/prod/api/users", 204) >= 1


def test_a_page_of_another_origin_reads_the_401_of_a_wrong_api_key(tab, second_origin):
    server = tab.server
    asked = server.answered("OPTIONS", "/prod/api/users", 204)  # by other tests
    url = server.url("/prod/api/users?limit=2")
    found = call_from(tab.page, second_origin, url, {"X-API-Key": "not-a-key"})
    assert found["status"] == 401, found
    assert found["body"]["code"] == "UNAUTHENTICATED"
    assert server.answered("OPTIONS", "/prod/api/users", 204) - asked >= 1
