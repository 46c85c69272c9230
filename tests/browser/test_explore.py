"""The web UI's Explore screen in a real browser: a conditional GET (ETag, then
304) and a 429 explained, and axe over the screen (docs/explain.md, "The Explore
screen")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import MOUNT, open_tab
from tests.browser.test_accessibility import AXE, Audit
from tests.browser.test_usability import field_error
from tests.conftest import ADMIN, skip_or_fail

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


@pytest.fixture(scope="module")
def server_env() -> dict[str, str]:
    """One login a minute per address: the second explained login meets the "auth"
    bucket empty. A test that logs in has a server of its own (fresh_server)."""
    return {"REFAPI_AUTH_RATE_LIMIT": "1"}


def explain(page, method: str, path: str, headers: str = "", body: str = "") -> None:
    page.get_by_label("Method").select_option(method)
    page.get_by_label("Path (with its query)").fill(path)
    page.get_by_label("Header fields").fill(headers)
    page.get_by_label("Body").fill(body)
    page.get_by_role("button", name="Explain").click()


def response_field(page, name: str):
    """The row of the response's field ``name``: field, value, meaning, set by."""
    return page.locator("[data-response] tbody tr").filter(
        has=page.get_by_role("cell", name=name, exact=True)
    )


@pytest.mark.fresh_server  # its two logins meet the "auth" bucket full
def test_explore_walks_a_conditional_get_then_a_429(tab):
    page = tab.page
    tab.open_ui("#/explore")
    expect(page.get_by_role("heading", name="Explore")).to_be_visible()

    explain(page, "GET", "/v1/todos/1")
    expect(page.get_by_role("heading", name="Response 200")).to_be_focused()
    etag_row = response_field(page, "ETag")
    expect(etag_row.locator("td").nth(2)).to_contain_text(
        "(RFC 9110 section 8.8.3). See docs/api.md#conditional-requests."
    )
    expect(etag_row.locator("td").nth(3)).to_have_text("router")
    etag = etag_row.locator("td").nth(1).text_content()
    assert etag and re.fullmatch(r'"[^"]+"', etag)
    expect(page.locator("[data-body]")).to_contain_text('"userId":1')
    expect(page.locator("[data-notes] li").first).to_be_visible()
    expect(page.locator("[data-request-notes]")).to_have_text("Nothing to change.")
    tab.screenshot("1-explore-200")

    explain(page, "GET", "/v1/todos/1", "If-None-Match: v1")  # the quotes left out
    expect(page.locator("[data-request-notes] li")).to_have_text(
        'bad, If-None-Match (RFC 9110 section 13.1.2): If-None-Match is "*" or a list'
        ' of entity tags, each quoted ("v1", W/"v1"): send the ETag a response gave,'
        " as it gave it."
    )

    explain(page, "GET", "/v1/todos/1", f"If-None-Match: {etag}")
    expect(page.get_by_role("heading", name="Response 304")).to_be_focused()
    expect(page.locator("[data-status-meaning]")).to_have_text(
        "Not Modified: the client's copy is current (RFC 9110 section 15.4.5). "
        "See docs/api.md#conditional-requests. Set by: router."
    )
    request_rows = page.locator("[data-request] tbody tr")
    expect(request_rows.filter(has_text="If-None-Match")).to_contain_text(etag)
    tab.screenshot("2-explore-304")

    login = '{"email": "nobody@example.com", "password": "not-the-password"}'
    explain(page, "POST", "/api/login", "Content-Type: application/json", login)
    expect(page.get_by_role("heading", name="Response 401")).to_be_visible()
    page.get_by_role("button", name="Explain").click()
    expect(page.get_by_role("heading", name="Response 429")).to_be_visible()
    expect(response_field(page, "Retry-After").locator("td").nth(3)).to_have_text(
        "RateLimit"
    )
    expect(page.locator("[data-status-meaning]")).to_contain_text(
        "See docs/rate-limits.md#429-too-many-requests. Set by: RateLimit."
    )
    tab.screenshot("3-explore-429")
    assert tab.problems == []


def test_a_docs_link_opens_the_served_guide_at_its_section_and_set_by_is_explained(
    tab,
):
    """An annotation's "See docs/..." is a link to the guide the service serves,
    under the mount point, opening at the section it names; each name in "Set by"
    has its meaning below the table (docs/explain.md, "The Explore screen")."""
    page = tab.page
    tab.open_ui("#/explore")
    explain(page, "GET", "/v1/todos/1")
    expect(page.get_by_role("heading", name="Response 200")).to_be_focused()
    link = response_field(page, "ETag").get_by_role(
        "link", name="docs/api.md#conditional-requests"
    )
    expect(link).to_have_attribute(
        "href", f"{MOUNT}/guides/api.md#conditional-requests"
    )
    with page.expect_popup() as opened:
        link.click()
    guide = opened.value
    guide.wait_for_load_state()
    assert guide.url == tab.server.url(f"{MOUNT}/guides/api.md#conditional-requests")
    section = guide.locator("#conditional-requests")
    expect(section).to_have_text("Conditional requests")
    expect(section).to_be_in_viewport()
    guide.close()

    setters = page.locator("[data-setters]")
    expect(setters.locator("dt")).to_have_text(
        ["server", "RequestId", "RateLimit", "router", "handler"]
    )
    router = setters.locator("dt:text-is('router') + dd")
    expect(router).to_contain_text("Matches the path to a route of the table")
    expect(router.get_by_role("link")).to_have_attribute(
        "href", f"{MOUNT}/guides/development.md#follow-one-request"
    )
    tab.screenshot("explore-setters")
    # The guide page itself, under its policy: nothing refused, no script error.
    page.goto(tab.server.url(f"{MOUNT}/guides/development.md#follow-one-request"))
    expect(page.locator("#follow-one-request")).to_be_in_viewport()
    tab.screenshot("guide")
    assert tab.problems == []


@pytest.mark.fresh_server  # its login needs the "auth" bucket full
def test_logged_in_an_unsafe_request_goes_on_the_sessions_authority(tab):
    """The screen adds the session's CSRF token to an unsafe request's fields, as
    the UI's own calls carry it (docs/explain.md, "Guards"): without it the
    explained POST would be 403 CSRF_FAILED."""
    page = tab.page
    tab.log_in(ADMIN["email"], ADMIN["password"])
    tab.open_ui("#/explore")
    body = '{"name": "made from Explore"}'
    explain(page, "POST", "/api/keys", "Content-Type: application/json", body)
    expect(page.get_by_role("heading", name="Response 201")).to_be_visible()
    expect(page.locator("[data-body]")).to_contain_text("made from Explore")
    assert tab.problems == []


def test_a_long_body_is_shown_cut_and_says_so(tab):
    """The explainer shows the first 16 KiB of a longer body and lints only them
    (docs/explain.md, "Limits"): the screen says both."""
    page = tab.page
    tab.open_ui("#/explore")
    explain(page, "GET", "/docs/swagger-ui-bundle.js")
    expect(page.get_by_role("heading", name="Response 200")).to_be_visible()
    expect(page.locator("[data-body]")).to_contain_text(
        re.compile(
            r"\[cut: the first 16 KiB of [\d,]+ bytes; the notes read only these\]$"
        )
    )
    expect(page.locator("[data-notes]")).to_contain_text(
        "info, General: The body is cut at 16,384 of its"
    )
    assert tab.problems == []


def test_a_refused_form_names_the_field_in_error(tab):
    page = tab.page
    tab.open_ui("#/explore")
    explain(page, "GET", "/lab/explain")
    expect(page.get_by_role("alert")).to_contain_text("The request is not valid.")
    expect(page.locator("#explore-path-error")).to_have_text(
        "may not be the explainer's or slow work's"
    )
    explain(page, "GET", "/v1/todos/1", "Host: example.com")
    field_error(
        page, page.get_by_label("Header fields"),
        "line 1, name: is taken from your own request",
    )  # fmt: skip
    expect(page.locator("#explore-path-error")).to_have_count(0)
    # Its old path, which answers 308 to it, is refused as well.
    explain(page, "GET", "/api/explain")
    expect(page.locator("#explore-path-error")).to_have_text(
        "may not be the explainer's or slow work's"
    )


def test_an_error_in_the_body_or_the_header_fields_goes_beside_that_field(tab):
    """The form's textareas take their errors as its inputs do (docs/authentication.md,
    "Errors"): beside the field, marked invalid, focused; a header line's error
    says which line, counted as the person sees them, blank lines included."""
    page = tab.page
    tab.open_ui("#/explore")
    alert = page.get_by_role("alert")
    body, headers = page.get_by_label("Body"), page.get_by_label("Header fields")

    explain(page, "POST", "/v1/todos", body="x" * 1600)
    expect(alert).to_have_text("The request is not valid.")
    field_error(page, body, "must be at most 1536 characters long")
    expect(body).to_be_focused()
    tab.screenshot("1-body-too-long")

    explain(page, "GET", "/v1/todos/1", "\n".join(f"X-N{i}: {i}" for i in range(20)))
    expect(alert).to_have_text("The request is not valid.")
    field_error(page, headers, "must have at most 16 items")
    expect(headers).to_be_focused()
    expect(body).not_to_have_attribute("aria-invalid", "true")

    explain(page, "GET", "/v1/todos/1", "Accept: */*\n\nHost: evil.example")
    field_error(page, headers, "line 3, name: is taken from your own request")
    expect(headers).to_be_focused()
    explain(page, "GET", "/v1/todos/1", f"X_Id: 1\nX-Long: {'v' * 129}")
    field_error(
        page, headers,
        "line 1, name: must be a field name of up to 64 characters, without an"
        " underscore; line 2, value: must be at most 128 characters long",
    )  # fmt: skip
    expect(alert.get_by_role("listitem")).to_have_count(0)
    tab.screenshot("2-header-lines")
    assert tab.problems == []


def test_a_new_explanation_takes_the_last_answer_away(tab):
    """An error under the answer to another request would read as its cause."""
    page = tab.page
    tab.open_ui("#/explore")
    explain(page, "GET", "/v1/todos/1")
    expect(page.get_by_role("heading", name="Response 200")).to_be_visible()
    explain(page, "GET", "/v1/todos/1", body="x" * 1600)
    expect(page.get_by_role("alert")).to_have_text("The request is not valid.")
    expect(page.locator("[data-exchange]")).to_be_hidden()
    expect(page.get_by_role("heading", name="Response 200")).to_have_count(0)
    tab.screenshot("error-alone")
    assert tab.problems == []


def test_the_explore_screen_has_no_serious_violations(browser, server, request):
    if not AXE.exists():
        skip_or_fail(f"{AXE} is missing (`make node-tools` installs axe-core)")
    context, opened = open_tab(browser, server, request.node.name, bypass_csp=True)
    audit = Audit(opened)
    page = opened.page
    opened.open_ui("#/explore")
    expect(page.get_by_role("heading", name="Explore")).to_be_visible()
    audit.check("explore")
    explain(page, "GET", "/v1/todos/1")
    expect(page.get_by_role("heading", name="Response 200")).to_be_visible()
    audit.check("explore-exchange")
    explain(page, "GET", "/lab/explain")
    expect(page.get_by_role("alert")).to_be_visible()
    audit.check("explore-error")
    context.close()
    assert not audit.found, audit.report()
