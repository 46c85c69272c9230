"""The front page in a real browser: it opens under the mount point, as HTML, under
its policy, and its links lead where they say."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DRAW_MS

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def test_the_front_page_links_to_the_docs(tab):
    page = tab.page
    page.goto(tab.server.url("/prod/"))
    expect(page).to_have_title("refapi")
    expect(page.get_by_role("heading", level=1)).to_have_text("refapi")
    expect(page.get_by_role("main")).to_be_visible()
    expect(page.get_by_role("navigation")).to_be_visible()
    tab.screenshot("front")
    page.get_by_role("link", name=re.compile("Interactive API docs")).click()
    expect(page).to_have_url(re.compile(r"/prod/docs$"))
    # Swagger UI drew the document the page named, served under /prod.
    title = page.locator(".swagger-ui .info .title")
    expect(title).to_contain_text("refapi", timeout=DRAW_MS)
    assert tab.problems == []  # nothing refused by a policy, no script error
