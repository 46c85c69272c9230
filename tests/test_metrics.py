"""``GET /metrics``: who may read it, and each figure moving with what it counts.

The figures belong to the process, so every test compares a figure before and
after what it does, never with an absolute number; a test of ``Metrics`` itself
counts in a folder of its own. The text is read with prometheus-client's parser.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import webtest
from prometheus_client.parser import text_string_to_metric_families
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from refapi import create_app, metrics
from refapi.storage.sqlite import SqliteStore
from tests.conftest import ADMIN

# Each test's figures apart from the others' (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("own_metrics_folder")

INSIDE = {"REMOTE_ADDR": "127.0.0.1"}
OUTSIDE = {"REMOTE_ADDR": "203.0.113.9"}
ALLOWED = ("127.0.0.1", "10.0.0.0/8", "2001:db8::/32")


def figures(app: webtest.TestApp, **environ) -> dict[tuple, float]:
    """Every sample as ``(name, sorted labels) -> value``."""
    response = app.get("/metrics", extra_environ={**INSIDE, **environ})
    assert response.content_type == "text/plain"
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(found: dict[tuple, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def metered(make_app):
    """An anonymous app with metrics on for ``ALLOWED``."""
    return make_app(anonymous=True, metrics=ALLOWED)


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "POST", "DELETE"])
def test_metrics_are_off_unless_configured(make_app, method):
    # Not there at all: no Allow to answer, no 405 (docs/operating.md, "Metrics").
    app = make_app(anonymous=True)
    response = app.request(
        "/metrics", method=method, environ=INSIDE, expect_errors=True
    )
    assert response.status_int == 404
    if method != "HEAD":
        assert response.json["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.20.30.40", "2001:db8::7", "::ffff:10.0.0.1"]
)
def test_an_allowed_address_reads_metrics_without_a_credential(metered, address):
    metered.get("/healthz")  # a family is listed from its first series on
    response = metered.get("/metrics", extra_environ={"REMOTE_ADDR": address})
    assert response.status_int == 200
    assert response.headers["Content-Type"] == (
        "text/plain; version=0.0.4; charset=utf-8"
    )
    assert response.headers["Cache-Control"] == "no-store"
    assert "# TYPE refapi_requests_total counter" in response.text


@pytest.mark.parametrize("address", ["203.0.113.9", "11.0.0.1", "2001:db9::1", ""])
def test_another_address_without_an_admin_credential_is_403(metered, address):
    response = metered.get(
        "/metrics", extra_environ={"REMOTE_ADDR": address}, status=403
    )
    assert response.json["code"] == "FORBIDDEN"
    assert "refapi_" not in response.text


def test_another_address_with_an_admin_credential_reads_metrics(make_app):
    app = make_app(metrics=ALLOWED)  # the admin's Bearer token on every request
    # A request counted first: the count is the process's, and this test may be the
    # first of its worker process to make one.
    app.get("/v1/todos/1")
    response = app.get("/metrics", extra_environ=OUTSIDE)
    assert "refapi_requests_total" in response.text


def test_another_address_with_an_admin_s_session_reads_metrics(metered):
    """A session is a credential where one is needed, as from another address
    here (it was 403); a stale one is 401, its cookie cleared, as on every route
    that needs one (docs/authentication.md, "Sessions and CSRF")."""
    metered.post_json("/api/login", ADMIN)  # the session cookie, kept by the app
    response = metered.get("/metrics", extra_environ=OUTSIDE)
    assert "refapi_requests_total" in response.text
    metered.reset()  # the cookie jar emptied
    metered.set_cookie("refapi_session", "a-session-that-ended")
    stale = metered.get("/metrics", extra_environ=OUTSIDE, status=401)
    assert "Max-Age=0" in stale.headers["Set-Cookie"]


def test_another_address_with_a_user_credential_is_403(metered):
    metered.post_json(
        "/api/users",
        {"email": "reader@example.com", "password": "a long passphrase",
         "firstName": "R", "lastName": "Eader"},
        status=201,
    )  # fmt: skip
    token = metered.post_json(
        "/api/login", {"email": "reader@example.com", "password": "a long passphrase"}
    ).json["token"]
    metered.get(
        "/metrics", headers={"Authorization": f"Bearer {token}"},
        extra_environ=OUTSIDE, status=403,
    )  # fmt: skip


def test_metrics_are_never_rate_limited(make_app):
    app = make_app(
        anonymous=True, metrics=ALLOWED, rate_limit_capacity=1, rate_limit_refill=0.001
    )
    app.get("/v1/todos/1")
    app.get("/v1/todos/1", status=429)
    for _ in range(5):
        response = app.get("/metrics", extra_environ=INSIDE)
        assert "RateLimit" not in response.headers
        assert "RateLimit-Policy" not in response.headers
    refused = app.get("/metrics", extra_environ=OUTSIDE, status=403)
    assert "RateLimit" not in refused.headers


def test_requests_are_counted_by_route_method_and_status(metered):
    before = figures(metered)
    for _ in range(3):
        metered.get("/v1/todos/1")
    metered.get("/v1/todos/99999", status=404)
    metered.get("/nowhere", status=404)
    unlinted = webtest.TestApp(metered.app, lint=False)  # WebTest's lint refuses BREW
    unlinted.request("/v1/todos/1", method="BREW", status=405)
    after = figures(metered)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    todo = {"mount": "", "route": "/v1/todos/{id}", "method": "GET"}
    assert moved("refapi_requests_total", **todo, status="200") == 3
    assert moved("refapi_requests_total", **todo, status="404") == 1
    nowhere = {"mount": "", "route": "", "method": "GET", "status": "404"}
    assert moved("refapi_requests_total", **nowhere) == 1
    brew = {"mount": "", "route": "", "method": "other", "status": "405"}
    assert moved("refapi_requests_total", **brew) == 1
    assert moved("refapi_request_duration_seconds_count", **todo) == 4
    assert moved("refapi_request_duration_seconds_sum", **todo) > 0
    assert (
        value(after, "refapi_request_duration_seconds_bucket", **todo, le="+Inf") >= 4
    )


def test_429s_are_counted(make_app):
    app = make_app(
        anonymous=True, metrics=ALLOWED, rate_limit_capacity=1, rate_limit_refill=0.001
    )
    before = value(figures(app), "refapi_rate_limited_total", mount="")
    app.get("/v1/todos/1")
    for _ in range(3):
        app.get("/v1/todos/1", status=429)
    assert value(figures(app), "refapi_rate_limited_total", mount="") == before + 3


def test_a_login_refused_for_its_failures_is_counted_as_rate_limited(make_app):
    """The failed-login limit answers 429 RATE_LIMITED from its handler, not from
    a bucket: a request answered 429 all the same (docs/operating.md, "Metrics")."""
    app = make_app(anonymous=True, metrics=ALLOWED, login_max_failures=2)
    before = value(figures(app), "refapi_rate_limited_total", mount="")
    wrong = {"email": "nobody@example.com", "password": "not-the-password"}
    for status in (401, 401, 429, 429):
        app.post_json("/api/login", wrong, status=status)
    assert value(figures(app), "refapi_rate_limited_total", mount="") == before + 2


def test_idempotent_replays_are_counted(make_app):
    app = make_app(metrics=ALLOWED)
    before = value(figures(app), "refapi_idempotent_replays_total", mount="")
    payment = {"amount": 10.5, "currency": "EUR"}
    key = {"Idempotency-Key": "replayed-once-0001"}
    first = app.post_json("/v1/payments", payment, headers=key, status=201)
    again = app.post_json("/v1/payments", payment, headers=key, status=201)
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert value(figures(app), "refapi_idempotent_replays_total", mount="") == (
        before + 1
    )


def test_a_storage_outage_is_counted_and_health_goes_to_0(tmp_path, config, clock):
    (tmp_path / "blocker").write_text("not a folder")
    store = SqliteStore(str(tmp_path / "blocker" / "refapi.db"))
    down = webtest.TestApp(
        create_app(config.__class__(**{**vars(config), "metrics": ALLOWED}),
                   store=store, clock=clock)
    )  # fmt: skip
    try:
        mount = {"SCRIPT_NAME": "/down"}  # its own series, whatever else ran
        before = value(
            figures(down, **mount), "refapi_storage_errors_total", mount="/down"
        )
        down.get("/v1/todos/1", extra_environ=mount, status=503)
        # The health check's 503 is an answer for a storage fault too.
        down.get("/healthz", extra_environ=mount, status=503)
        after = figures(down, **mount)
    finally:
        store.close()
    assert value(after, "refapi_storage_errors_total", mount="/down") == before + 2
    health = "refapi_health_check"
    assert value(after, health, mount="/down", check="storage") == 0
    assert ((health, (("check", "storage"), ("mount", "/down")))) in after


def test_health_is_1_while_its_checks_pass(metered):
    metered.get("/healthz")
    found = figures(metered)
    assert value(found, "refapi_health_check", mount="", check="storage") == 1
    assert value(found, "refapi_health_check", mount="", check="rateLimit") == 1


def test_two_instances_in_one_process_share_figures_by_mount(tmp_path, config, clock):
    def instance(name: str):
        own = config.__class__(
            **{**vars(config), "metrics": ALLOWED,
               "database_url": f"sqlite:///{tmp_path}/{name}.db",
               "data_dir": str(tmp_path / name)}
        )  # fmt: skip
        return create_app(own, clock=clock)

    prod, dev = instance("prod"), instance("dev")
    try:
        gateway = webtest.TestApp(
            DispatcherMiddleware(prod, {"/prod": prod, "/dev": dev})
        )
        todo = {"route": "/v1/todos/{id}", "method": "GET", "status": "200"}
        before = figures(gateway)
        gateway.get("/prod/v1/todos/1")
        gateway.get("/dev/v1/todos/1")
        gateway.get("/dev/v1/todos/2")
        seen_by_prod = figures(gateway, SCRIPT_NAME="") | {}
        seen_by_dev = (
            webtest.TestApp(gateway.app).get("/dev/metrics", extra_environ=INSIDE).text
        )
    finally:
        prod.close()
        dev.close()
    for mount, count in (("/prod", 1), ("/dev", 2)):
        moved = value(seen_by_prod, "refapi_requests_total", mount=mount, **todo)
        assert moved - value(before, "refapi_requests_total", mount=mount, **todo) == (
            count
        )
    # Either instance serves the process's figures: the same series.
    assert 'refapi_requests_total{method="GET",mount="/prod"' in seen_by_dev


def test_a_proxys_prefix_mints_no_series(make_app):
    # Behind a trusted proxy that passes its client's X-Forwarded-Prefix on, each
    # prefix was a mount label: a thousand requests, a thousand series.
    app = make_app(anonymous=True, metrics=ALLOWED, trust_proxy=1)
    for n in range(5):
        prefixed = {
            "HTTP_X_FORWARDED_PREFIX": f"/m{n}",
            "HTTP_X_FORWARDED_FOR": f"10.0.0.{n}",
        }
        app.get("/v1/todos/1", extra_environ=prefixed)
        app.get("/healthz", extra_environ=prefixed)
    found = figures(app)
    mounts = {dict(labels).get("mount") for _, labels in found}
    assert mounts == {""}
    todo = {"route": "/v1/todos/{id}", "method": "GET", "status": "200"}
    assert value(found, "refapi_requests_total", mount="", **todo) == 5


def test_a_login_password_never_reaches_the_metrics(metered):
    metered.post_json("/api/login", ADMIN)
    assert ADMIN["password"] not in metered.get("/metrics", extra_environ=INSIDE).text


def test_the_figures_folder_is_made_in_memory_when_there_is_some(tmp_path):
    # Memory-mapped files on a full disk kill the worker: keep them off the disk.
    environ: dict[str, str] = {}
    folder = metrics.prepare_folder(environ, memory=str(tmp_path))
    assert Path(folder).parent == tmp_path and environ[metrics.FOLDER] == folder
    metrics.remove_folder(environ)
    assert not Path(folder).exists()
    unwritable = tmp_path / "missing"
    folder = metrics.prepare_folder(environ, memory=str(unwritable))
    assert Path(folder).parent == Path(tempfile.gettempdir())
    metrics.remove_folder(environ)


def samples(figures: metrics.Metrics) -> dict[tuple, float]:
    return {
        (sample.name, sample.labels.get("le")): sample.value
        for family in text_string_to_metric_families(figures.render().decode())
        for sample in family.samples
        if sample.labels.get("route") == "/t"
    }


def test_each_duration_falls_in_the_first_bucket_whose_bound_holds_it(tmp_path):
    figures = metrics.Metrics(str(tmp_path))
    for seconds in (0.001, 0.0011, 11.0):  # on a bound, past it, past them all
        figures.request("", "/t", "GET", 200, seconds)
    found = samples(figures)
    name = "refapi_request_duration_seconds"
    assert found[f"{name}_bucket", "0.001"] == 1  # a bound is "less or equal"
    assert found[f"{name}_bucket", "0.0025"] == 2
    assert found[f"{name}_bucket", "10.0"] == 2
    assert found[f"{name}_bucket", "+Inf"] == found[f"{name}_count", None] == 3
    assert found[f"{name}_sum", None] == pytest.approx(11.0021)
    assert found["refapi_requests_total", None] == 3


def test_a_forked_child_counts_in_a_file_of_its_own(tmp_path):
    # A child writing into its parent's file would race it: at the fork it starts
    # its own, from 0, and the scrape sums both.
    figures = metrics.Metrics(str(tmp_path))
    figures.request("", "/t", "GET", 200, 0.002)
    pid = os.fork()
    if pid == 0:
        figures.request("", "/t", "GET", 200, 0.002)
        figures.request("", "/t", "GET", 200, 0.002)
        os._exit(0)
    os.waitpid(pid, 0)
    figures.request("", "/t", "GET", 200, 0.002)
    assert samples(figures)["refapi_requests_total", None] == 4
    assert len(list(tmp_path.glob(f"counts-{pid}-*.keys"))) == 1


def test_the_health_is_the_lowest_of_the_live_workers(tmp_path, monkeypatch):
    # Each process sets its own gauge; a scrape forgets a dead one's, whether a
    # server's hook told it (gunicorn's child_exit) or not (Granian has none).
    monkeypatch.setenv(metrics.FOLDER, str(tmp_path))
    figures = metrics.Metrics(str(tmp_path))
    figures.health("", {"storage": "ok"})
    checked, told = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        figures.health("", {"storage": "failing"})
        os.write(checked[1], b"x")
        os.read(told[0], 1)  # alive until the parent has read the gauge
        os._exit(0)
    os.read(checked[0], 1)

    def storage() -> float:
        [value] = [
            sample.value
            for family in text_string_to_metric_families(figures.render().decode())
            for sample in family.samples
            if sample.name == "refapi_health_check"
        ]
        return value

    assert storage() == 0  # the live child's failing check
    os.write(told[1], b"x")
    os.waitpid(pid, 0)
    assert storage() == 1  # no hook forgot it: the scrape did
    assert not list(tmp_path.glob(f"health-{pid}-*"))
    for end in (*checked, *told):
        os.close(end)


def test_a_hook_forgets_a_dead_worker_s_health_too(tmp_path, monkeypatch):
    monkeypatch.setenv(metrics.FOLDER, str(tmp_path))
    figures = metrics.Metrics(str(tmp_path))
    figures.health("", {"storage": "ok"})
    pid = os.fork()
    if pid == 0:
        figures.health("", {"storage": "failing"})
        os._exit(0)
    os.waitpid(pid, 0)
    assert list(tmp_path.glob(f"health-{pid}-*"))
    metrics.worker_exited(pid)
    assert not list(tmp_path.glob(f"health-{pid}-*"))


def test_a_forked_child_has_no_health_until_it_checks(tmp_path):
    # A child has checked nothing: its file starts with no gauge, not with its
    # parent's series at 0, which would read as a failing check for as long as the
    # file stays (a process that serves and then forks; stop 44's flaky test).
    figures = metrics.Metrics(str(tmp_path))
    figures.health("", {"storage": "ok"})
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert metrics.read(str(tmp_path))[1] == {
        ("refapi_health_check", "", "storage"): 1.0
    }


def test_the_process_figures_are_those_of_the_folder_named_now(tmp_path, monkeypatch):
    # One instance a folder: an app made after REFAPI_METRICS_DIR changed counts in
    # the new folder, not in the first one this process used.
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    monkeypatch.setenv(metrics.FOLDER, str(first))
    in_first = metrics.process_metrics()
    monkeypatch.setenv(metrics.FOLDER, str(second))
    assert metrics.process_metrics().folder == str(second)
    monkeypatch.setenv(metrics.FOLDER, str(first))
    assert metrics.process_metrics() is in_first


def test_label_values_come_back_as_they_were_counted(tmp_path):
    figures = metrics.Metrics(str(tmp_path))
    mount, route = 'a "quoted" \\ mount\n', "/v1/é/{id}"
    figures.request(mount, route, "GET", 200, 0.002)
    found = {
        tuple(sorted(sample.labels.items()))
        for family in text_string_to_metric_families(figures.render().decode())
        for sample in family.samples
        if sample.name == "refapi_requests_total"
    }
    labels = {"mount": mount, "route": route, "method": "GET", "status": "200"}
    assert found == {tuple(sorted(labels.items()))}


def test_a_scrape_reads_complete_key_lines_only(tmp_path):
    # A line being written when the scrape reads the file is not a series yet.
    figures = metrics.Metrics(str(tmp_path))
    figures.request("", "/t", "GET", 200, 0.002)
    [keys] = tmp_path.glob("counts-*.keys")
    with keys.open("a") as file:
        file.write('["refapi_requests_total", "", "/t", "GE')
    assert samples(figures)["refapi_requests_total", None] == 1
