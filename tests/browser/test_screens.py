"""The web UI in a real browser: each screen, its API call, its errors, the keyboard,
and the retry policy of its script."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Route, expect

from tests.conftest import ADMIN
from tests.e2e.harness import GunicornServer

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


DOWN = {"code": "UNAVAILABLE", "message": "Down.", "details": {}}


def api_calls(server: GunicornServer, method: str, path: str) -> int:
    """How many ``method path`` requests the server's request log shows."""
    return server.answered(method, f"/prod/api{path}")


@pytest.mark.fresh_server  # Ada is user 2, the list holds the admin and her
def test_register_login_list_detail_edit_delete(tab, pool):
    page, server = tab.page, tab.server
    tab.open_ui()
    expect(page).to_have_url(re.compile(r"/prod/ui/#/login$"))  # nobody logged in
    page.get_by_role("link", name="Register").first.click()

    # register: POST /api/users
    expect(page.get_by_role("heading", name="Register")).to_be_visible()
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password").fill("analytical-engine")
    page.get_by_label("First name").fill("Ada")
    page.get_by_label("Last name").fill("Lovelace")
    tab.screenshot("1-register")
    page.get_by_role("button", name="Register").click()

    # login, from the keyboard: the heading has the focus, the email is filled in
    expect(page.get_by_role("status")).to_have_text(
        "Registered ada@example.com: log in."
    )
    expect(page.get_by_role("heading", name="Log in")).to_be_focused()
    expect(page.get_by_label("Email")).to_have_value("ada@example.com")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Password")).to_be_focused()
    page.keyboard.type("analytical-engine")
    tab.screenshot("2-login")
    page.keyboard.press("Enter")

    # list: GET /api/users
    expect(page.locator("#who")).to_have_text("Logged in as ada@example.com (user)")
    expect(page).to_have_url(re.compile(r"#/users$"))
    rows = page.get_by_role("row")
    expect(rows).to_have_count(3)  # the header, the admin and Ada
    expect(rows.nth(2)).to_have_text(re.compile(r"ada@example\.com\s*Ada Lovelace"))
    tab.screenshot("3-list")

    # detail: GET /api/users/2
    page.get_by_role("link", name="ada@example.com").click()
    expect(page).to_have_url(re.compile(r"#/users/2$"))
    expect(page.get_by_role("heading", name="User 2")).to_be_visible()
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    fields = ["ada@example.com", "Ada", "Lovelace", "user", stamp, stamp]
    expect(page.locator("dd")).to_have_text(fields)
    tab.screenshot("4-detail")

    # edit: PUT /api/users/2, with the session's CSRF token
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("First name")).to_have_value("Ada")
    expect(page.get_by_label("Role")).to_be_hidden()  # only an admin gives a role
    page.get_by_label("First name").fill("Augusta Ada")
    tab.screenshot("5-edit")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page).to_have_url(re.compile(r"#/users/2$"))
    expect(page.locator("dd").nth(1)).to_have_text("Augusta Ada")

    # delete: a confirmation, then DELETE /api/users/2
    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete user 2")).to_be_visible()
    expect(page.get_by_role("main")).to_contain_text("Delete ada@example.com?")
    assert api_calls(server, "DELETE", "/users/2") == 0  # asked first, nothing sent
    tab.screenshot("6-delete")
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("Your account was deleted.")
    expect(page).to_have_url(re.compile(r"#/login$"))
    expect(page.locator("#who")).to_have_text("")

    gone = pool.request("GET", server.url("/prod/api/users/2"))
    assert gone.status == 404
    assert tab.problems == [] and server.log_failures() == []


@pytest.mark.fresh_server  # the list holds its twelve users alone
def test_an_admin_pages_through_the_list_gives_a_role_and_deletes_a_user(tab, register):
    page, server = tab.page, tab.server
    for n in range(1, 12):
        register(f"user{n:02}@example.com")
    tab.log_in(ADMIN["email"], ADMIN["password"])

    expect(page.get_by_role("row")).to_have_count(11)  # the header and ten users
    first = page.get_by_role("link", name="First page")
    expect(first).to_be_hidden()  # on the first page it would lead nowhere
    page.get_by_role("link", name="Next page").click()
    expect(page).to_have_url(re.compile(r"#/users\?cursor=."))
    expect(page.get_by_role("row")).to_have_count(3)  # the last two of twelve
    expect(page.get_by_role("link", name="Next page")).to_be_hidden()
    expect(first).to_be_visible()
    tab.screenshot("list-page-2")
    first.click()
    expect(page).to_have_url(re.compile(r"#/users$"))
    expect(page.get_by_role("row")).to_have_count(11)
    expect(first).to_be_hidden()
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("row")).to_have_count(3)

    page.get_by_role("link", name="user11@example.com").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Role").select_option("admin")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("dd").nth(3)).to_have_text("admin")

    page.get_by_role("link", name="Delete").click()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("Deleted user11@example.com.")
    expect(page).to_have_url(re.compile(r"#/users$"))
    expect(page.locator("#who")).to_contain_text(ADMIN["email"])  # still logged in
    assert api_calls(server, "DELETE", "/users/12") == 1
    assert tab.problems == [] and server.log_failures() == []


def sent_by_the_page(tab, method: str, path: str) -> list[str]:
    """The URLs of the page's ``method path`` requests, as Playwright sees them
    leave (a request a route fulfils never reaches the server's log)."""
    url = tab.server.url(f"/prod/api{path}")
    urls: list[str] = []
    tab.page.on(
        "request",
        lambda request: (
            urls.append(request.url)
            if request.method == method and request.url.split("?")[0] == url
            else None
        ),
    )
    return urls


def test_a_wrong_password_is_shown_and_never_sent_twice(tab):
    page, server = tab.page, tab.server
    sent = sent_by_the_page(tab, "POST", "/login")
    earlier = api_calls(server, "POST", "/login")  # other tests' on the server
    tab.open_ui("#/login")
    page.get_by_label("Email").fill(ADMIN["email"])
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    # The error object's message; the script shows it only once its retry loop
    # has ended, so the one request in the log is all there will be.
    expect(page.get_by_role("alert")).to_have_text(
        "The email or the password is wrong."
    )
    tab.screenshot("login-error")
    assert api_calls(server, "POST", "/login") - earlier == 1
    assert len(sent) == 1
    expect(page.locator("#who")).to_have_text("")
    assert tab.problems == []


def test_a_server_error_shows_the_error_objects_message_and_its_fields(tab, register):
    page = tab.page
    register("taken@example.com")
    tab.open_ui("#/register")
    page.get_by_label("Email").fill("taken@example.com")
    page.get_by_label("Password").fill("password-2")
    page.get_by_role("button", name="Register").click()
    expect(page.get_by_role("alert")).to_have_text("A user with this email exists.")
    # A rule only the server knows: the browser's own checks let this through.
    page.get_by_label("Email").fill("a@b")
    page.get_by_label("First name").fill("x" * 101)
    page.get_by_role("button", name="Register").click()
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("The request is not valid.")
    # The field's message beside it (tests/browser/test_usability.py has more).
    expect(page.get_by_label("First name")).to_have_accessible_description(
        "must be at most 100 characters long"
    )
    tab.screenshot("register-error")
    assert tab.problems == []


# Each wait the page's script asks for, in the page: the retries' sleeps are its
# only timers (ui/app.js, sleep). Timestamps taken where the requests are routed
# would be this process's, which under a loaded machine runs late by hundreds of
# milliseconds either side of a wait; the delays asked for are exact.
RECORD_WAITS = """
const setTimer = window.setTimeout;
window.asked = [];
window.setTimeout = function (handler, ms, ...rest) {
  window.asked.push(ms);
  return setTimer.call(this, handler, ms, ...rest);
};
"""


@pytest.mark.fresh_server  # the list holds the admin alone
def test_the_script_retries_as_the_policy_says(tab):
    """A network failure, 429, 502, 503 and 504 are retried, waiting 2**i x 300 ms
    before retry i, or Retry-After x 1000 ms; after retries + 1 attempts the last
    answer's message is shown."""
    page = tab.page
    tab.log_in(ADMIN["email"], ADMIN["password"])
    page.add_init_script(RECORD_WAITS)
    attempts = [0]
    answers: list = [(503, "1"), "network", 429, "pass"]

    def flaky(route: Route) -> None:
        attempts[0] += 1
        answer = answers[min(attempts[0], len(answers)) - 1]
        if answer == "network":
            route.abort()
        elif answer == "pass":
            route.continue_()
        else:
            status, retry_after = answer if isinstance(answer, tuple) else (answer, "")
            headers = {"Retry-After": retry_after} if retry_after else {}
            route.fulfill(
                status=status, headers=headers, content_type="application/json",
                body=json.dumps(DOWN),
            )  # fmt: skip

    page.route(re.compile(r"/prod/api/users\?"), flaky)
    page.reload()  # the list again, its call through the route
    expect(page.get_by_role("row")).to_have_count(2, timeout=8_000)
    assert attempts == [4]
    # Retry-After: 1 before retry 0 (not 300 ms), then 2**1 x 300 after the network
    # failure and 2**2 x 300 after the 429 without Retry-After.
    assert page.evaluate("window.asked") == [1000, 600, 1200]

    attempts[0] = 0
    answers[:] = [502, 504, 503]
    page.reload()
    expect(page.get_by_role("alert")).to_have_text("Down.", timeout=8_000)
    assert attempts == [4]  # retries + 1, then the last answer's message
    assert page.evaluate("window.asked") == [300, 600, 1200]
    assert tab.problems == []


def words(seconds: int) -> str:
    """A wait as docs/authentication.md, "Retries", words it: seconds under a
    minute, minutes rounded up under two hours, hours rounded up beyond."""
    minutes, hours = -(-seconds // 60), -(-seconds // 3600)
    n, unit = (
        (seconds, "second")
        if seconds < 60
        else (minutes, "minute")
        if minutes < 120
        else (hours, "hour")
    )
    return f"{n} {unit}{'' if n == 1 else 's'}"


@pytest.mark.fresh_server  # locks its address out; counts every login
def test_a_locked_login_says_how_long_to_wait_and_sends_nothing_more(tab):
    """The server's own login bucket: after its failures a login is 429 with a
    Retry-After of minutes, far over the 5 s the script waits by itself. The
    wait is shown in words, and no request follows until the person acts."""
    page, server = tab.page, tab.server
    sent = sent_by_the_page(tab, "POST", "/login")
    tab.open_ui("#/login")
    page.get_by_label("Email").fill(ADMIN["email"])
    page.get_by_label("Password").fill("not-the-password")
    alert = page.get_by_role("alert")
    clicks = 0
    for _ in range(6):
        clicks += 1
        with page.expect_response(re.compile(r"/prod/api/login$")) as answered:
            page.get_by_role("button", name="Log in").click()
        if answered.value.status == 429:
            break
        expect(alert).to_have_text("The email or the password is wrong.")
        expect(page.get_by_role("button", name="Log in")).to_be_enabled()
    assert answered.value.status == 429, "the login bucket never emptied"
    retry_after = int(answered.value.headers["retry-after"])
    assert retry_after > 5, retry_after  # over what the script waits by itself
    expect(alert).to_have_text(f"Too many attempts; try again in {words(retry_after)}.")
    expect(page.locator("#status")).to_have_text("")  # no "trying again"
    tab.screenshot("login-locked")
    # The button is free again, and the script sends nothing by itself: a second
    # (the shortest wait the policy has is 300 ms) passes with no request.
    expect(page.get_by_role("button", name="Log in")).to_be_enabled()
    page.wait_for_timeout(1_000)
    assert len(sent) == clicks == server.answered("POST", "/prod/api/login")
    assert tab.problems == []


@pytest.mark.fresh_server  # the list holds the admin alone
def test_a_429_with_a_short_retry_after_is_retried_by_itself(tab):
    """Retry-After: 1 is within the 5 s the script waits by itself: the screen
    says so in words, asks again after a second, and shows the list."""
    page = tab.page
    tab.log_in(ADMIN["email"], ADMIN["password"])
    sent = sent_by_the_page(tab, "GET", "/users")
    refused: list[Route] = []

    def once(route: Route) -> None:
        if refused:
            route.continue_()
            return
        refused.append(route)
        route.fulfill(
            status=429, headers={"Retry-After": "1"},
            content_type="application/json",
            body=json.dumps({"code": "RATE_LIMITED", "message": "Slow down.",
                             "details": {"retry_after": 1}}),
        )  # fmt: skip

    page.route(re.compile(r"/prod/api/users\?"), once)
    page.reload()
    expect(page.get_by_role("status")).to_have_text(
        "No answer yet; trying again in 1 second."
    )
    expect(page.get_by_role("row")).to_have_count(2)  # the header and the admin
    expect(page.locator("#status")).to_have_text("")
    expect(page.get_by_role("alert")).to_be_hidden()
    assert len(sent) == 2
    assert tab.problems == []


def put_bodies(tab, user_id: int) -> list[dict]:
    """The bodies of the page's ``PUT /api/users/{user_id}``, as they were sent."""
    bodies: list[dict] = []
    url = tab.server.url(f"/prod/api/users/{user_id}")
    tab.page.on(
        "request",
        lambda request: (
            bodies.append(request.post_data_json)
            if request.method == "PUT" and request.url == url
            else None
        ),
    )
    return bodies


def test_changing_ones_own_password_sends_the_current_password(tab, register, pool):
    page, server = tab.page, tab.server
    ada = register("ada@example.com", "old-password-1")
    tab.log_in("ada@example.com", "old-password-1")
    sent = put_bodies(tab, ada["id"])
    page.goto(server.url(f"/prod/ui/#/users/{ada['id']}/edit"))
    current = page.get_by_label("Current password")
    expect(current).to_be_hidden()  # asked only when a new password is typed
    page.get_by_label("New password").fill("new-password-1")
    expect(current).to_be_visible()
    expect(current).to_have_attribute("autocomplete", "current-password")
    # Required: the browser's own check keeps the form from being sent without it.
    page.get_by_role("button", name="Save").click()
    expect(current).to_be_focused()
    assert sent == []
    current.fill("old-password-1")
    tab.screenshot("own-password")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    assert sent == [
        {"email": "ada@example.com", "firstName": "", "lastName": "",
         "password": "new-password-1", "currentPassword": "old-password-1"},
    ]  # fmt: skip
    login = json.dumps({"email": "ada@example.com", "password": "new-password-1"})
    logged_in = pool.request(
        "POST", server.url("/prod/api/login"), body=login,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert logged_in.status == 200

    # Emptied again, the new password takes the current one with it.
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("New password").fill("x")
    page.get_by_label("New password").fill("")
    expect(page.get_by_label("Current password")).to_be_hidden()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    assert "currentPassword" not in sent[-1] and "password" not in sent[-1]
    assert tab.problems == [] and server.log_failures() == []


def test_an_admin_changing_another_users_password_is_not_asked_for_theirs(
    tab, register
):
    page = tab.page
    bob = register("bob@example.com")
    tab.log_in(ADMIN["email"], ADMIN["password"])
    sent = put_bodies(tab, bob["id"])
    page.goto(tab.server.url(f"/prod/ui/#/users/{bob['id']}/edit"))
    page.get_by_label("New password").fill("bobs-new-password")
    expect(page.get_by_label("Current password")).to_be_hidden()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    assert sent == [
        {"email": "bob@example.com", "firstName": "", "lastName": "",
         "password": "bobs-new-password", "role": "user"},
    ]  # fmt: skip
    assert tab.problems == []


def test_a_wrong_current_password_is_shown_beside_its_field(tab, register, pool):
    """Needs the server to refuse a wrong ``currentPassword`` with ``403``."""
    page, server = tab.page, tab.server
    grace = register("grace@example.com", "old-password-1")
    tab.log_in("grace@example.com", "old-password-1")
    page.goto(server.url(f"/prod/ui/#/users/{grace['id']}/edit"))
    page.get_by_label("New password").fill("new-password-1")
    current = page.get_by_label("Current password")
    current.fill("not-my-password")
    with page.expect_response(
        lambda response: response.request.method == "PUT"
    ) as answered:
        page.get_by_role("button", name="Save").click()
    response = answered.value
    assert response.status == 403, response.text()
    refusal = response.json()
    assert refusal["code"] == "FORBIDDEN"
    expect(page.get_by_role("alert")).to_contain_text(refusal["message"])
    expect(current).to_have_attribute("aria-invalid", "true")
    expect(current).to_have_accessible_description(refusal["message"])
    expect(current).to_be_focused()
    expect(page.get_by_label("New password")).not_to_have_attribute(
        "aria-invalid", "true"
    )
    tab.screenshot("wrong-current-password")
    # Nothing changed: the old password still logs in.
    login = json.dumps({"email": "grace@example.com", "password": "old-password-1"})
    logged_in = pool.request(
        "POST", server.url("/prod/api/login"), body=login,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert logged_in.status == 200
    assert tab.problems == []
