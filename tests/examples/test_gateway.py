"""Two instances mounted at /prod and /dev in one process (examples/gateway.py).

Werkzeug's ``DispatcherMiddleware`` moves the prefix into ``SCRIPT_NAME``, and every
URL an instance emits must carry it. The two instances share no data, secret,
rate-limit bucket or connection; a path no mapping covers is the error object, 404.
Each test drives the whole gateway through WebTest. Over gunicorn:
tests/e2e/test_mount.py.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
from pathlib import Path

import pytest
import webtest

from examples.gateway import create_gateway
from refapi import create_app
from refapi.config import Config
from tests.conftest import ADMIN, TEST_AUTH
from tests.helpers import assert_error

# On both backends: each instance has a database of its own, a pool each.
pytestmark = pytest.mark.every_backend

PREFIXES = ["/prod", "/dev"]


@pytest.fixture
def make_gateway(database_urls, clock):
    """Build a gateway over the test's prod and dev databases with the config given
    (on SQLite, prod.db and dev.db in ``tmp_path``)."""
    made = []
    prod_url, dev_url = database_urls("prod"), database_urls("dev")

    def make(config: Config | None = None):
        made.append(
            create_gateway(
                prod_url,
                dev_url,
                config=config or Config(**TEST_AUTH),
                clock=clock,
            )
        )
        return made[-1]

    yield make
    for gateway in made:
        gateway.close()


@pytest.fixture
def gateway(make_gateway):
    return make_gateway()


class AdminOfEachMount:
    """Send each instance's own admin token (the two share no user or token)."""

    def __init__(self, app, authorizations: dict[str, str]) -> None:
        self.app = app
        self.authorizations = authorizations

    def __call__(self, environ, start_response):
        prefix = "/" + environ.get("PATH_INFO", "").split("/")[1]
        if prefix in self.authorizations and "HTTP_AUTHORIZATION" not in environ:
            environ["HTTP_AUTHORIZATION"] = self.authorizations[prefix]
        return self.app(environ, start_response)


def as_admins(gateway) -> webtest.TestApp:
    """The gateway, every request to a mount carrying that instance's admin token."""
    plain = webtest.TestApp(gateway)
    tokens = {
        prefix: plain.post_json(f"{prefix}/api/login", ADMIN).json["token"]
        for prefix in PREFIXES
    }
    bearers = {prefix: f"Bearer {token}" for prefix, token in tokens.items()}
    return webtest.TestApp(AdminOfEachMount(gateway, bearers))


@pytest.fixture
def app(gateway) -> webtest.TestApp:
    return as_admins(gateway)


def served(db: Path) -> bool:
    """Does a store hold ``<db>.lock``, as each does from its start to its close?"""
    fd = os.open(f"{db}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# -- every URL an instance emits carries its prefix ------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_openapi_servers_carry_the_mount_prefix(app, prefix):
    document = app.get(f"{prefix}/openapi.json", status=200).json
    assert document["servers"] == [{"url": prefix, "x-internal": False}]
    # The docs page points at its own instance's document.
    assert f'"{prefix}/openapi.json"' in app.get(f"{prefix}/docs", status=200).text


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_csv_catalogue_endpoints_carry_the_mount_prefix(app, prefix):
    text = app.get(f"{prefix}/api/download_csv.php", status=200).text
    rows = list(csv.reader(io.StringIO(text, newline="")))[1:]
    assert rows and all(row[1].startswith(f"{prefix}/") for row in rows)
    assert [f"{prefix}/v1/articles", "POST"] in [row[1:3] for row in rows]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_location_carries_the_mount_prefix(app, prefix):
    created = app.post_json(f"{prefix}/v1/articles", {"title": "a"}, status=201)
    location = created.headers["Location"]
    assert location == f"{prefix}/v1/articles/{created.json['id']}"
    assert app.get(location, status=200).json == created.json


@pytest.mark.parametrize("prefix", PREFIXES)
def test_link_and_the_next_page_carry_the_mount_prefix(app, prefix):
    first = app.get(f"{prefix}/v1/items?limit=2", status=200)
    cursor = first.headers["X-Next-Cursor"]
    assert first.json["nextCursor"] == cursor
    next_url = f"{prefix}/v1/items?cursor={cursor}&limit=2"
    assert first.headers["Link"] == f'<{next_url}>; rel="next"'
    second = app.get(next_url, status=200)
    assert [item["id"] for item in second.json["data"]] == [3, 4]


# -- what no mapping covers ------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/", "/staging/v1/items", "/v1/items", "/prodx/v1/items", "/DEV/v1/items"]
)
def test_an_unmapped_path_is_the_error_object_404(app, path):
    response = app.get(path, headers={"Origin": "https://ui.example"}, status=404)
    assert_error(response, 404, "NOT_FOUND")
    assert response.json["details"] == {"mapped": ["/dev", "/prod"]}
    assert response.headers["X-Request-Id"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_the_two_instances_must_not_share_a_database(tmp_path):
    url = f"sqlite:///{tmp_path}/one.db"
    with pytest.raises(ValueError, match="must not share a database"):
        create_gateway(url, url, config=Config(**TEST_AUTH))
    assert not (tmp_path / "one.db").exists()  # refused before opening anything


def test_each_instance_has_its_own_folder_under_the_gateways(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROD_DATABASE_URL", raising=False)
    monkeypatch.setenv("DEV_DATABASE_URL", f"sqlite:///{tmp_path}/elsewhere/dev.db")
    gateway = create_gateway(config=Config(**TEST_AUTH, data_dir="data/gateway"))
    try:
        prod, dev = gateway.instances["/prod"].config, gateway.instances["/dev"].config
        assert prod.database_url == "sqlite:///data/gateway/prod/refapi.db"
        assert (prod.data_dir, dev.data_dir) == (
            "data/gateway/prod",
            "data/gateway/dev",
        )
        assert (tmp_path / "data" / "gateway" / "prod" / "refapi.db").exists()
        assert (tmp_path / "elsewhere" / "dev.db").exists()
        assert not (tmp_path / "data" / "gateway" / "dev" / "refapi.db").exists()
    finally:
        gateway.close()


def test_each_instance_writes_its_own_admin_password_file_and_leaves_make_runs_alone(
    tmp_path, monkeypatch, clock
):
    # No admin configured: each instance makes admin@localhost with a password in a
    # file in its own data folder, as `make run`'s server does in data/.
    monkeypatch.chdir(tmp_path)
    for name in ("PROD_DATABASE_URL", "DEV_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    cheap = {"password_hash": TEST_AUTH["password_hash"]}
    run = create_app(Config(**cheap), clock=clock)  # `make run`: data/refapi.db
    run_file = tmp_path / "data" / "admin-password.txt"
    before = run_file.read_text()
    gateway = create_gateway(
        config=Config(**cheap, data_dir="data/gateway"), clock=clock
    )
    try:
        assert run_file.read_text() == before
        email, password = before.splitlines()[:2]
        run_app = webtest.TestApp(run)
        run_app.post_json("/api/login", {"email": email, "password": password})
        app = webtest.TestApp(gateway)
        owns = {}
        for prefix in PREFIXES:
            own = tmp_path / "data" / "gateway" / prefix[1:] / "admin-password.txt"
            email, password = owns[prefix] = own.read_text().splitlines()[:2]
            login = {"email": email, "password": password}
            app.post_json(f"{prefix}/api/login", login, status=200)
        assert owns["/prod"][1] != owns["/dev"][1] != before.splitlines()[1]
        login = {"email": "admin@localhost", "password": owns["/prod"][1]}
        app.post_json("/dev/api/login", login, status=401)
    finally:
        gateway.close()
        run.close()


# -- no data shared ----------------------------------------------------------------


def test_an_article_created_in_prod_is_not_found_in_dev(app):
    created = app.post_json("/prod/v1/articles", {"title": "prod only"}, status=201)
    article_id = created.json["id"]
    assert app.get(f"/prod/v1/articles/{article_id}", status=200)
    assert_error(
        app.get(f"/dev/v1/articles/{article_id}", status=404), 404, "NOT_FOUND"
    )
    assert app.get("/dev/v1/articles", status=200).json["data"] == []


def test_a_payment_and_its_idempotency_key_in_prod_are_unknown_in_dev(app):
    key = {"Idempotency-Key": "order-42"}
    prod_body = {"amount": 10, "currency": "USD"}
    dev_body = {"amount": 99, "currency": "EUR"}
    prod = app.post_json("/prod/v1/payments", prod_body, headers=key, status=201)
    dev = app.post_json("/dev/v1/payments", dev_body, headers=key, status=201)
    assert "Idempotent-Replayed" not in dev.headers
    assert dev.json["id"] != prod.json["id"] and dev.json["amount"] == 99
    missing = app.get(f"/dev/v1/payments/{prod.json['id']}", status=404)
    assert_error(missing, 404, "NOT_FOUND")
    # In prod the key is taken: another body with it is refused there.
    reused = app.post_json("/prod/v1/payments", dev_body, headers=key, status=422)
    assert_error(reused, 422, "IDEMPOTENCY_KEY_REUSED")


# -- no secret shared ----------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [Config(**TEST_AUTH), Config(**TEST_AUTH, secret_key=b"one-key-for-all")],
    ids=["generated-keys", "configured-key-ignored"],
)
def test_a_cursor_issued_by_prod_is_invalid_at_dev(make_gateway, config):
    app = as_admins(make_gateway(config))
    cursor = app.get("/prod/v1/items?limit=2", status=200).headers["X-Next-Cursor"]
    assert app.get(f"/prod/v1/items?cursor={cursor}", status=200)
    refused = app.get(f"/dev/v1/items?cursor={cursor}", status=400)
    assert_error(refused, 400, "INVALID_CURSOR")


# -- no bucket shared ----------------------------------------------------------------


def test_an_empty_bucket_in_prod_leaves_dev_its_own(make_gateway):
    # The clock does not move: no token comes back during the test.
    config = Config(**TEST_AUTH, rate_limit_capacity=2, rate_limit_refill=0.5)
    app = as_admins(make_gateway(config))
    for _ in range(2):
        app.get("/prod/v1/todos/1", status=200)
    assert_error(app.get("/prod/v1/todos/1", status=429), 429, "RATE_LIMITED")
    dev = app.get("/dev/v1/todos/1", status=200)
    assert dev.headers["RateLimit"] == '"default";r=1;t=0'


# -- no connection shared ---------------------------------------------------------


@pytest.mark.sqlite_only
def test_sqlite_each_instance_has_its_own_store_on_its_own_file(gateway, tmp_path):
    prod, dev = gateway.instances["/prod"], gateway.instances["/dev"]
    assert prod.store is not dev.store
    assert {prod.store.path, dev.store.path} == {
        f"{tmp_path}/prod.db",
        f"{tmp_path}/dev.db",
    }
    assert prod.store.secret_key() != dev.store.secret_key()


@pytest.mark.sqlite_only
def test_sqlite_closing_dev_leaves_prod_serving(app, gateway, tmp_path):
    gateway.instances["/dev"].close()
    assert not served(tmp_path / "dev.db")
    assert served(tmp_path / "prod.db")
    app.post_json("/prod/v1/articles", {"title": "still here"}, status=201)
    assert app.get("/prod/v1/articles", status=200).json["data"]


@pytest.mark.sqlite_only
def test_sqlite_a_deleted_dev_database_is_503_at_dev_only(app, tmp_path):
    (tmp_path / "dev.db").unlink()
    health = app.get("/dev/healthz", status=503)
    assert health.json["checks"]["storage"] == "unavailable"
    refused = app.post_json("/dev/v1/articles", {"title": "lost"}, status=503)
    assert_error(refused, 503, "UNAVAILABLE")
    assert app.get("/prod/healthz", status=200).json["status"] == "ok"
    app.post_json("/prod/v1/articles", {"title": "kept"}, status=201)


@pytest.mark.sqlite_only
def test_sqlite_closing_the_gateway_releases_both_databases(gateway, tmp_path):
    databases = [tmp_path / "prod.db", tmp_path / "dev.db"]
    assert all(map(served, databases))
    gateway.close()
    assert not any(map(served, databases))
