"""The web UI as a person uses it: an error beside the field it names, read out by a
screen reader; a missing user shown as a heading and the error, which has the
focus; an input's edge that can be seen; the edit screen's fields in
one column; nothing wider than a phone's screen, Explore's answer included; no
"Register" for someone logged in.

Each test leaves screenshots in ``test-output/screenshots/<test name>/``.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.conftest import ADMIN

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

PHONE = {"width": 390, "height": 844}  # an iPhone 12 to 15, in CSS pixels
# No space to break at: the longest thing a screen is likely to hold.
LONG_EMAIL = "maximilian.featherstonehaugh-cholmondeley@accounts.example.com"
LONG_NAME = "Wolfeschlegelsteinhausenbergerdorff"


def field_error(page: Page, input: Locator, message: str) -> None:
    """``input`` is marked invalid and described by ``message``, shown beside it."""
    expect(input).to_have_attribute("aria-invalid", "true")
    expect(input).to_have_accessible_description(message)
    described_by = input.get_attribute("aria-describedby")
    assert described_by
    note = page.locator(f"#{described_by}")
    expect(note).to_be_visible()
    expect(note).to_have_text(message)
    # Beside it: just below the input, starting where the input starts.
    box, under = input.bounding_box(), note.bounding_box()
    assert box and under
    assert abs(under["x"] - box["x"]) <= 1
    assert 0 <= under["y"] - (box["y"] + box["height"]) <= 16


def fits(page: Page, width: int = PHONE["width"]) -> None:
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, (page.url, scroll_width)


def test_a_validation_error_is_shown_beside_the_field_it_names(tab, register):
    page = tab.page
    user = register("ada@example.com", firstName="Ada")
    tab.log_in("ada@example.com", "password-1")
    page.goto(tab.server.url(f"/prod/ui/#/users/{user['id']}/edit"))
    first_name = page.get_by_label("First name")
    first_name.fill("x" * 101)
    page.get_by_role("button", name="Save").click()

    # The form-level message says what happened; the field says what is wrong
    # with it, and takes the focus, so a screen reader reads label and message.
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("The request is not valid.")
    expect(alert.get_by_role("listitem")).to_have_count(0)
    field_error(page, first_name, "must be at most 100 characters long")
    expect(first_name).to_be_focused()
    for other in ("Email", "Last name"):
        expect(page.get_by_label(other)).not_to_have_attribute("aria-invalid", "true")
    tab.screenshot("1-edit-field-error")

    # Put right, the field's error goes with the next submit.
    first_name.fill("Augusta Ada")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("First name")).not_to_have_attribute(
        "aria-invalid", "true"
    )
    expect(page.locator(".field-error")).to_have_count(0)
    assert tab.problems == []


def test_a_conflict_names_the_email_field_on_register(tab, register):
    page = tab.page
    register("taken@example.com")
    tab.open_ui("#/register")
    email = page.get_by_label("Email")
    email.fill("TAKEN@example.com")
    page.get_by_label("Password").fill("password-2")
    page.get_by_label("First name").fill("x" * 101)
    page.get_by_role("button", name="Register").click()
    # Two fields at once: both marked, the first one focused.
    field_error(
        page, page.get_by_label("First name"), "must be at most 100 characters long"
    )
    page.get_by_label("First name").fill("Tak")
    page.get_by_role("button", name="Register").click()
    # 409 names its field as details.field: "email".
    expect(page.get_by_role("alert")).to_have_text("A user with this email exists.")
    field_error(page, email, "A user with this email exists.")
    expect(email).to_be_focused()
    expect(page.get_by_label("First name")).not_to_have_attribute(
        "aria-invalid", "true"
    )
    tab.screenshot("register-conflict")
    assert tab.problems == []


def test_errors_that_name_no_field_of_the_form_stay_in_the_form_level_message(tab):
    """The whole body (``""``) and a member the form has no input for are listed
    above the form; members it has inputs for go beside them."""
    page = tab.page
    answer = {
        "code": "VALIDATION_ERROR",
        "message": "The request is not valid.",
        "details": {
            "errors": [
                {"field": "", "message": "must have at most 20 members"},
                {"field": "/lastName", "message": "must be a string"},
                {"field": "/nickname", "message": "is not allowed"},
                {"field": "/role", "message": "must be one of user, admin"},
            ]
        },
    }

    def refuse(route: Route) -> None:
        route.fulfill(
            status=400, content_type="application/json", body=json.dumps(answer)
        )

    tab.log_in(ADMIN["email"], ADMIN["password"])
    page.get_by_role("link", name=ADMIN["email"]).click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Role").wait_for()
    page.route(re.compile(r"/prod/api/users/1$"), refuse)
    # The admin's Role select is shown here, so /role goes beside it (on a user's
    # own edit screen, below, it is hidden, and /role stays above the form).
    page.get_by_role("button", name="Save").click()
    alert = page.get_by_role("alert")
    expect(alert.get_by_role("listitem")).to_have_text(
        ["must have at most 20 members", "/nickname: is not allowed"]
    )
    field_error(page, page.get_by_label("Last name"), "must be a string")
    field_error(page, page.get_by_label("Role"), "must be one of user, admin")
    tab.screenshot("form-level-and-field-errors")
    assert tab.problems == []


def test_an_error_for_a_hidden_input_stays_in_the_form_level_message(tab, register):
    page = tab.page
    user = register("bob@example.com")
    tab.log_in("bob@example.com", "password-1")
    page.goto(tab.server.url(f"/prod/ui/#/users/{user['id']}/edit"))
    expect(page.get_by_label("Role")).to_be_hidden()
    answer = {
        "code": "VALIDATION_ERROR",
        "message": "The request is not valid.",
        "details": {"errors": [{"field": "/role", "message": "must be one of user"}]},
    }
    page.route(
        re.compile(rf"/prod/api/users/{user['id']}$"),
        lambda route: route.fulfill(
            status=400, content_type="application/json", body=json.dumps(answer)
        ),
    )
    page.get_by_role("button", name="Save").click()
    alert = page.get_by_role("alert")
    expect(alert.get_by_role("listitem")).to_have_text(["/role: must be one of user"])
    expect(page.locator("[aria-invalid]")).to_have_count(0)


@pytest.mark.fresh_server  # it tries to delete the last admin
def test_an_error_that_names_no_field_takes_the_focus_from_the_button(tab):
    """The button is disabled while its form is sent, which takes the focus from
    it; an error naming no field of the form takes the focus, as a screen's does
    (WCAG 2.2, 2.4.3 Focus Order)."""
    page = tab.page
    message = page.locator("#error-message")
    tab.open_ui("#/login")
    page.get_by_label("Email").fill("nobody@example.com")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").focus()
    page.keyboard.press("Enter")
    expect(message).to_have_text("The email or the password is wrong.")
    expect(message).to_be_focused()
    # From the message, Tab goes on to the form's first field.
    page.keyboard.press("Tab")
    expect(page.get_by_label("Email")).to_be_focused()

    tab.log_in(ADMIN["email"], ADMIN["password"])
    page.goto(tab.server.url("/prod/ui/#/users/1/delete"))
    page.get_by_role("button", name="Delete").click()
    expect(message).to_have_text(
        "This is the last admin: make another user an admin first."
    )
    expect(message).to_be_focused()
    tab.screenshot("last-admin")
    assert tab.problems == []


@pytest.mark.parametrize("screen", ["", "/edit", "/delete"])
def test_a_missing_user_shows_a_heading_and_the_error_with_the_focus(tab, screen):
    page = tab.page
    tab.log_in(ADMIN["email"], ADMIN["password"])
    page.goto(tab.server.url(f"/prod/ui/#/users/999{screen}"))
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("User 999 does not exist.")
    # A level-one heading, as every screen has, and nothing else: no labels, no
    # empty values, no links to act on nobody.
    main = page.get_by_role("main")
    expect(main.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.locator("main > *")).to_have_count(1)
    # The message has the focus, so it is what a screen reader reads first.
    expect(page.locator("#error-message")).to_be_focused()
    tab.screenshot(f"missing-user{screen.replace('/', '-')}")
    # The next screen replaces the error.
    page.get_by_role("link", name="refapi users").click()
    expect(page.get_by_role("alert")).to_be_hidden()
    expect(page.get_by_role("heading", name="Users")).to_be_visible()
    assert tab.problems == []


def luminance(rgb: str) -> float:
    """WCAG 2.2's relative luminance of a computed ``rgb(r, g, b)`` colour."""
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    r, g, b = (
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: str, other: str) -> float:
    lighter, darker = sorted([luminance(one), luminance(other)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_an_inputs_edge_has_3_to_1_contrast_on_both_sides(tab):
    """WCAG 2.2, 1.4.11 Non-text Contrast: the border that shows where to type is
    at least 3:1 against the page around it and the white inside it."""
    page = tab.page
    tab.open_ui("#/register")
    expect(page.get_by_role("heading", name="Register")).to_be_visible()
    page_colour = page.evaluate(
        "getComputedStyle(document.documentElement).backgroundColor"
    )
    for input in page.locator("main input").all():
        edge, inside = input.evaluate(
            """(el) => [getComputedStyle(el).borderTopColor,
                        getComputedStyle(el).backgroundColor]"""
        )
        assert contrast(edge, page_colour) >= 3, (edge, page_colour)
        assert contrast(edge, inside) >= 3, (edge, inside)
    assert tab.problems == []


def test_a_slow_answer_never_replaces_a_newer_screen(tab):
    """A screen is shown once its data is in (above); a person who moved on while
    it loaded keeps the screen they moved to."""
    page = tab.page
    tab.log_in(ADMIN["email"], ADMIN["password"])
    held: list[Route] = []
    page.route(re.compile(r"/prod/api/users/1$"), lambda route: held.append(route))
    with page.expect_request(re.compile(r"/prod/api/users/1$")):
        page.get_by_role("link", name=ADMIN["email"]).click()
    page.get_by_role("link", name="refapi users").click()  # moved on
    expect(page).to_have_url(re.compile(r"#/users$"))
    expect(page.get_by_role("heading", name="Users")).to_be_visible()
    with page.expect_response(re.compile(r"/prod/api/users/1$")):
        held[0].continue_()
    page.wait_for_timeout(300)  # time enough for the script to show it, if it would
    expect(page.get_by_role("heading", name="Users")).to_be_visible()
    expect(page.get_by_role("heading", name="User 1")).to_have_count(0)
    assert tab.problems == []


def test_the_edit_screens_role_and_buttons_line_up_with_the_fields(tab, register):
    page = tab.page
    user = register("carol@example.com")
    tab.log_in(ADMIN["email"], ADMIN["password"])
    page.goto(tab.server.url(f"/prod/ui/#/users/{user['id']}/edit"))
    # The screen is shown once its user is in: measure it only then.
    expect(page.get_by_label("Role")).to_be_visible()
    email = page.get_by_label("Email").bounding_box()
    assert email
    for name in ("First name", "Last name", "Role"):
        box = page.get_by_label(name).bounding_box()
        assert box
        line = (box["x"], box["width"], box["height"])
        assert line == (email["x"], email["width"], email["height"]), name
    # Each label starts where its control starts, just above it.
    for name in ("Email", "Role"):
        control = page.get_by_label(name).bounding_box()
        label = page.locator("label", has_text=re.compile(f"^{name}$")).bounding_box()
        assert control and label
        assert label["x"] == control["x"], name
        assert 0 <= control["y"] - (label["y"] + label["height"]) <= 8, name
    # Save starts at the fields' left edge; Cancel sits on the same line.
    save = page.get_by_role("button", name="Save").bounding_box()
    cancel = page.get_by_role("link", name="Cancel").bounding_box()
    role = page.get_by_label("Role").bounding_box()
    assert save and cancel and role
    assert save["x"] == email["x"]
    middle = save["y"] + save["height"] / 2
    assert abs(cancel["y"] + cancel["height"] / 2 - middle) <= 1
    # As far below the Role select as the fields are from each other's labels.
    assert 8 <= save["y"] - (role["y"] + role["height"]) <= 24
    tab.screenshot("edit-as-admin")
    assert tab.problems == []


@pytest.mark.fresh_server  # the list holds the admin and its user alone
def test_nothing_overflows_a_390_px_wide_screen(tab, register):
    page = tab.page
    page.set_viewport_size(PHONE)
    long_user = register(LONG_EMAIL, firstName=LONG_NAME, lastName=LONG_NAME)

    tab.open_ui("#/login")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    fits(page)
    tab.screenshot("1-login")
    page.get_by_role("link", name="Register").first.click()
    page.get_by_label("Email").fill(LONG_EMAIL)
    page.get_by_label("Password").fill("password-2")
    page.get_by_label("First name").fill("x" * 101)
    page.get_by_role("button", name="Register").click()
    expect(page.get_by_label("First name")).to_have_attribute("aria-invalid", "true")
    fits(page)
    tab.screenshot("2-register-error")

    tab.log_in(LONG_EMAIL, "password-1")  # the header's longest line
    expect(page.get_by_role("row")).to_have_count(3)
    fits(page)
    tab.screenshot("3-list-as-user")
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()

    tab.log_in(ADMIN["email"], ADMIN["password"])
    expect(page.get_by_role("row")).to_have_count(3)
    fits(page)
    tab.screenshot("4-list")
    page.get_by_role("link", name=LONG_EMAIL).click()
    expect(page.get_by_role("heading", name=f"User {long_user['id']}")).to_be_visible()
    fits(page)
    tab.screenshot("5-detail")
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Last name").fill("x" * 101)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_label("Last name")).to_have_attribute("aria-invalid", "true")
    fits(page)
    tab.screenshot("6-edit-error")
    page.get_by_role("link", name="Cancel").click()
    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("main")).to_contain_text(LONG_EMAIL)
    fits(page)
    tab.screenshot("7-delete")
    page.goto(tab.server.url("/prod/ui/#/users/999"))
    expect(page.get_by_role("alert")).to_be_visible()
    fits(page)
    tab.screenshot("8-missing-user")
    # Explore once it shows an answer: the fields' names ("X-Content-Type-Options",
    # and one of the request's own with no hyphen to break at) and "Set by" wrap.
    page.goto(tab.server.url("/prod/ui/#/explore"))
    page.get_by_label("Header fields").fill(f"X-{LONG_NAME}: 1")
    page.get_by_role("button", name="Explain").click()
    expect(page.get_by_role("heading", name="Response 200")).to_be_visible()
    fits(page)
    tab.screenshot("9-explore")
    assert tab.problems == []


def test_a_logged_in_user_is_not_offered_register(tab):
    page = tab.page
    tab.open_ui("#/login")
    header = page.get_by_role("banner")
    expect(header.get_by_role("link", name="Register")).to_be_visible()
    tab.screenshot("1-anonymous")

    tab.log_in(ADMIN["email"], ADMIN["password"])
    expect(page.get_by_role("link", name="Register")).to_have_count(0)
    tab.screenshot("2-logged-in")
    # Nor by its address: a logged-in user asking for it gets the list.
    page.goto(tab.server.url("/prod/ui/#/register"))
    expect(page).to_have_url(re.compile(r"#/users$"))
    expect(page.get_by_role("heading", name="Users")).to_be_visible()
    expect(page.get_by_role("link", name="Register")).to_have_count(0)
    # Nor through the login screen's "No account yet?".
    page.goto(tab.server.url("/prod/ui/#/login"))
    expect(page).to_have_url(re.compile(r"#/users$"))
    expect(page.get_by_role("link", name="Register")).to_have_count(0)

    page.get_by_role("button", name="Log out").click()
    expect(header.get_by_role("link", name="Register")).to_be_visible()
    assert tab.problems == []
