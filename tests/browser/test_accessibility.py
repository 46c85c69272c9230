"""axe-core over every screen the service serves: the front page, /docs, each
screen of the web UI and the guides' pages.

axe-core (Deque's accessibility engine, the version ``tools/contract`` pins, installed
by ``make node-tools``) runs in the page after it has drawn the screen, and any
violation of impact "critical" or "serious" fails the test, named with the
elements it was found on. Most of its rules are WCAG 2.x success criteria
(contrast 1.4.3, names of controls 4.1.2, the page's language 3.1.1).

axe is put into the page as an inline script, which the pages' own policies refuse,
as they should: so it runs in a browser context of its own that bypasses the
Content-Security-Policy, and the other tests, in ordinary contexts, keep catching
whatever the policy refuses (docs/development.md, "Tests").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import DRAW_MS, MOUNT, TIMEOUT_MS, Tab, open_tab
from tests.conftest import ADMIN, skip_or_fail
from tests.e2e.harness import ROOT, GunicornServer

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

AXE = ROOT / "tools" / "contract" / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("critical", "serious")
# axe.run has no timeout of its own: the page gives up after this, so every wait
# stays bounded (docs/development.md, "Tests").
AXE_TIMEOUT_MS = 4 * TIMEOUT_MS
# axe reads colours as they are drawn: a transition still running (Swagger UI's
# buttons take 0.3 s, which a loaded machine stretches) is measured half-way, so
# the finite ones are let end first.
RUN_AXE = """async (timeout) => {
    const late = new Promise((_, reject) => setTimeout(
        () => reject(new Error(`axe.run took over ${timeout} ms`)), timeout));
    const settled = Promise.all(document.getAnimations()
        .filter((a) => a.effect.getComputedTiming().endTime !== Infinity)
        .map((a) => a.finished.catch(() => null)));
    await Promise.race([settled, late]);
    const results = await Promise.race([
        axe.run(document, { resultTypes: ["violations"] }), late]);
    return results.violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        targets: v.nodes.map((node) => node.target.join(" ")) }));
}"""


@dataclass
class Audit:
    """A tab whose screens axe checks; what it found, screen by screen."""

    tab: Tab
    found: dict[str, list[dict]] = field(default_factory=dict)

    def check(self, screen: str, also: tuple[str, ...] = ()) -> None:
        """axe over the page as it is: its severe violations, and those of the
        rules named in ``also`` whatever their impact, are kept for ``screen``."""
        page = self.tab.page
        if not page.evaluate("typeof window.axe === 'object'"):
            page.add_script_tag(path=str(AXE))  # once a document
        violations = page.evaluate(RUN_AXE, AXE_TIMEOUT_MS)
        severe = [v for v in violations if v["impact"] in SEVERE or v["id"] in also]
        if severe:
            self.found[screen] = severe
        self.tab.screenshot(screen)

    def report(self) -> str:
        """Each screen's violations: id, impact, what it means, where (a few)."""
        lines = []
        for screen, violations in self.found.items():
            for v in violations:
                where = ", ".join(v["targets"][:4])
                more = len(v["targets"]) - 4
                where += f" and {more} more" if more > 0 else ""
                lines.append(
                    f"{screen}: {v['id']} ({v['impact']}, {len(v['targets'])}x): "
                    f"{v['help']}: {where}"
                )
        return "axe found:\n" + "\n".join(lines)

    def ids(self) -> dict[str, list[str]]:
        return {screen: [v["id"] for v in vs] for screen, vs in self.found.items()}


@pytest.fixture
def audit(browser: Browser, server: GunicornServer, request) -> Iterator[Audit]:
    if not AXE.exists():
        skip_or_fail(f"{AXE} is missing (`make node-tools` installs axe-core)")
    context, opened = open_tab(browser, server, request.node.name, bypass_csp=True)
    yield Audit(opened)
    context.close()


def open_docs(tab: Tab) -> None:
    """/docs, drawn: the operations listed, the servers select filled in."""
    tab.page.goto(tab.server.url(f"{MOUNT}/docs"))
    expect(tab.page.locator(".opblock").first).to_be_visible(timeout=DRAW_MS)
    expect(tab.page.locator(".servers select option")).to_have_text(MOUNT)


def test_the_docs_page_has_no_serious_violations(audit):
    page = audit.tab.page
    open_docs(audit.tab)
    audit.check("docs")

    # One operation open: its parameters, responses and their sample bodies;
    # then "Try it out": the parameters' inputs, Cancel and Execute.
    operation = page.locator("#operations-articles-list_articles")
    operation.locator(".opblock-summary-control").click(timeout=DRAW_MS)
    expect(operation.locator(".responses-wrapper")).to_be_visible(timeout=DRAW_MS)
    audit.check("docs-operation-open")
    operation.get_by_role("button", name="Try it out").click(timeout=DRAW_MS)
    expect(operation.get_by_role("button", name="Execute")).to_be_visible(
        timeout=DRAW_MS
    )
    audit.check("docs-try-it-out")

    # A POST in "Try it out": its body's text box; executed: the answer and its
    # Download button; then the Authorize dialog.
    operation = page.locator("#operations-articles-create_article")
    operation.locator(".opblock-summary-control").click(timeout=DRAW_MS)
    operation.get_by_role("button", name="Try it out").click(timeout=DRAW_MS)
    body = operation.locator("textarea.body-param__text")
    expect(body).to_be_visible(timeout=DRAW_MS)
    audit.check("docs-post-try-it-out")
    # Execute sends the request and draws its answer: on a loaded machine that can
    # take past TIMEOUT_MS, as drawing can (the click waits for what it started).
    operation.get_by_role("button", name="Execute").click(timeout=DRAW_MS)
    expect(operation.locator(".responses-table.live-responses-table")).to_be_visible(
        timeout=DRAW_MS
    )
    expect(operation.locator(".download-contents")).to_be_visible(timeout=DRAW_MS)
    audit.check("docs-post-executed")
    page.locator(".auth-wrapper .btn.authorize").click()
    dialog = page.locator(".dialog-ux .modal-ux")
    expect(dialog).to_be_visible()
    audit.check("docs-authorize")
    # A scheme authorized: its button reads, and is named, "Logout".
    first = dialog.locator(".auth-container").first
    first.locator("input").first.fill("a-token")
    first.get_by_role("button", name="Authorize", exact=True).click()
    expect(first.get_by_role("button", name="Logout", exact=True)).to_be_visible()
    audit.check("docs-authorized")
    assert audit.ids() == {}, audit.report()
    assert audit.tab.problems == []


def test_the_front_page_has_no_serious_violations(audit):
    audit.tab.page.goto(audit.tab.server.url(f"{MOUNT}/"))
    expect(audit.tab.page.get_by_role("heading", level=1)).to_have_text("refapi")
    audit.check("front")
    assert audit.ids() == {}, audit.report()
    assert audit.tab.problems == []


@pytest.mark.parametrize("name", ["", "api.md", "benchmarks.md"])
def test_a_guide_page_has_no_serious_violations(audit, name):
    """The guides as the service serves them (docs/api.md, "The guides"): the
    README with its chart, the longest, and the one of wide tables."""
    audit.tab.page.goto(audit.tab.server.url(f"{MOUNT}/guides/{name}"))
    expect(audit.tab.page.get_by_role("heading", level=1)).to_be_visible()
    audit.check(f"guide-{name or 'readme'}")
    assert audit.ids() == {}, audit.report()
    assert audit.tab.problems == []


def test_the_docs_name_their_selects_and_keep_links_out_of_buttons(tab):
    """Under the page's own policy: what the initializer adds is refused nothing."""
    page = tab.page
    open_docs(tab)
    # A viewport as wide as the device: a phone does not lay it out 980 px wide.
    viewport = page.locator('meta[name="viewport"]')
    expect(viewport).to_have_attribute("content", "width=device-width, initial-scale=1")
    servers = page.get_by_role("combobox", name="Servers", exact=True)
    expect(servers).to_have_value(MOUNT)

    operation = page.locator("#operations-articles-list_articles")
    summary = operation.locator(".opblock-summary-control")
    expect(summary.locator("a[href]")).to_have_count(0)
    expect(summary).to_contain_text("/v1/articles")
    summary.click(timeout=DRAW_MS)
    # Deep linking still works: the open operation is in the URL.
    expect(page).to_have_url(re.compile(r"/prod/docs#/articles/list_articles$"))
    examples = operation.locator("select.examples-select-element")
    expect(examples.first).to_be_visible(timeout=DRAW_MS)
    for select in examples.all():
        expect(select).to_have_accessible_name("Examples")
    tab.screenshot("docs-operation-open")
    assert tab.problems == []


@pytest.mark.fresh_server  # Ada is user 2, the list holds the admin and her
def test_every_screen_of_the_web_ui_has_no_serious_violations(audit, register):
    tab = audit.tab
    page = tab.page
    register("ada@example.com", firstName="Ada", lastName="Lovelace")

    tab.open_ui("#/login")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    audit.check("login")
    page.get_by_label("Email").fill(ADMIN["email"])
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    audit.check("login-error")

    tab.open_ui("#/register")
    expect(page.get_by_role("heading", name="Register")).to_be_visible()
    audit.check("register")
    page.get_by_label("Email").fill("someone@example.com")
    page.get_by_label("Password").fill("password-2")
    page.get_by_label("First name").fill("x" * 101)
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".field-error")).to_be_visible()
    audit.check("register-field-error")

    tab.log_in(ADMIN["email"], ADMIN["password"])
    expect(page.get_by_role("row")).to_have_count(3)
    audit.check("users")
    page.get_by_role("link", name="ada@example.com").click()
    expect(page.get_by_role("heading", name="User 2")).to_be_visible()
    audit.check("user")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("Role")).to_be_visible()  # an admin's edit screen
    audit.check("edit")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    audit.check("user-saved")
    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete user 2")).to_be_visible()
    audit.check("delete")

    # One's own edit screen, a new password typed: the current one is asked.
    page.goto(tab.server.url(f"{MOUNT}/ui/#/users/1/edit"))
    page.get_by_label("New password").fill("new-password-1")
    expect(page.get_by_label("Current password")).to_be_visible()
    audit.check("edit-own-password")

    page.goto(tab.server.url(f"{MOUNT}/ui/#/users/99"))  # a heading and the error
    expect(page.get_by_role("alert")).to_have_text("User 99 does not exist.")
    # "moderate" in axe, but a screen without a level-one heading is one a
    # screen reader's user cannot find their place on.
    audit.check("user-missing", also=("page-has-heading-one",))

    # A 429 whose Retry-After is too long to wait by ourselves: the wait in words.
    # The page is given the answer (the server's login bucket would lock this
    # address out of the logins above).
    page.route(
        re.compile(r"/prod/api/users/2$"),
        lambda route: route.fulfill(
            status=429, headers={"Retry-After": "637"},
            content_type="application/json",
            body='{"code": "RATE_LIMITED", "message": "Too many.", "details": {}}',
        ),
    )  # fmt: skip
    page.goto(tab.server.url(f"{MOUNT}/ui/#/users/2"))
    expect(page.get_by_role("alert")).to_have_text(
        "Too many attempts; try again in 11 minutes."
    )
    audit.check("rate-limited", also=("page-has-heading-one",))
    assert audit.ids() == {}, audit.report()
    assert tab.problems == []
