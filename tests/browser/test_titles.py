"""Each screen of the web UI names itself in the page's title, "Log in: refapi", as
the guides' pages do (WCAG 2.2, 2.4.2 Page Titled): a tab, a bookmark and the
history say which screen they hold (docs/authentication.md, "Keyboard and
labels")."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import MOUNT
from tests.conftest import ADMIN

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def test_each_screen_has_a_title_of_its_own(tab, register):
    page = tab.page
    user = register("titled@example.com")

    def shows(fragment: str, title: str) -> None:
        page.goto(tab.server.url(f"{MOUNT}/ui/{fragment}"))
        expect(page).to_have_title(title)

    shows("#/login", "Log in: refapi")
    shows("#/register", "Register: refapi")
    shows("#/explore", "Explore: refapi")
    tab.log_in(ADMIN["email"], ADMIN["password"])
    expect(page).to_have_title("Users: refapi")
    shows(f"#/users/{user['id']}", f"User {user['id']}: refapi")
    shows(f"#/users/{user['id']}/edit", f"Edit user {user['id']}: refapi")
    shows(f"#/users/{user['id']}/delete", f"Delete user {user['id']}: refapi")
    shows("#/users/999", "Not found: refapi")
    # Moving on by a link says so too.
    page.get_by_role("link", name="Explore").click()
    expect(page).to_have_title("Explore: refapi")
    assert tab.problems == []
