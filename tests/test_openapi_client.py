"""A client generated from /openapi.json by openapi-python-client works against us.

That is what users do with the document: the generator reads it (warnings fail the
test), writes a typed package into the test's folder, and the package, imported
from there, creates, reads, lists and deletes an article through httpx's WSGI
transport into the app, and reads a 404 as the generated error model.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from refapi import create_app
from tests.conftest import ADMIN

pytestmark = pytest.mark.slow  # generates a client package

GENERATOR = Path(sys.prefix) / "bin" / "openapi-python-client"
PACKAGE = "refapi_client"


@pytest.fixture
def generated(tmp_path, app, monkeypatch):
    """The generated package, imported; it is forgotten again after the test."""
    document = tmp_path / "openapi.json"
    document.write_bytes(app.get("/openapi.json").body)
    settings = tmp_path / "generator.json"
    # No post hooks: they would run ruff over the generated code, to format it.
    settings.write_text(json.dumps({"post_hooks": []}))
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(document), "--meta", "none",
         "--output-path", str(tmp_path / PACKAGE), "--config", str(settings),
         "--fail-on-warning"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module(PACKAGE)
    for name in [m for m in sys.modules if m.partition(".")[0] == PACKAGE]:
        del sys.modules[name]


@pytest.fixture
def api(config, generated):
    """A generated ``AuthenticatedClient`` that speaks to a fresh app in process,
    with the token the generated login call got for the admin."""
    from refapi_client.api.session import login
    from refapi_client.models import Login, LoginResult

    app = create_app(config)
    transport = {"transport": httpx.WSGITransport(app=app)}
    with generated.Client("http://refapi.test", httpx_args=transport) as anonymous:
        answer = login.sync(client=anonymous, body=Login(**ADMIN))
    assert isinstance(answer, LoginResult) and answer.token_type == "Bearer"
    client = generated.AuthenticatedClient(
        "http://refapi.test", token=answer.token, httpx_args=transport
    )
    with client:
        yield client
    app.close()


def test_a_generated_client_creates_reads_lists_and_deletes_an_article(generated, api):
    from refapi_client.api.articles import (
        create_article,
        delete_article,
        get_article,
        list_articles,
    )
    from refapi_client.models import Article, ArticleCreate, ArticlePage

    made = create_article.sync_detailed(
        client=api, body=ArticleCreate(title="Generated", tags=["client"])
    )
    assert made.status_code == 201
    assert made.headers["Location"] == f"/v1/articles/{made.parsed.id}"
    article = made.parsed
    assert isinstance(article, Article)
    assert (article.title, article.tags) == ("Generated", ["client"])

    read = get_article.sync(article.id, client=api)
    assert isinstance(read, Article)
    assert read.to_dict() == article.to_dict()

    page = list_articles.sync(client=api, limit=10)
    assert isinstance(page, ArticlePage)
    assert [a.id for a in page.data] == [article.id]
    assert page.next_cursor is None

    gone = delete_article.sync_detailed(article.id, client=api)
    assert gone.status_code == 204
    assert list_articles.sync(client=api).data == []


def test_a_generated_client_reads_a_404_as_the_error_model(generated, api):
    from refapi_client.api.articles import get_article
    from refapi_client.models import Error

    missing = get_article.sync_detailed(424242, client=api)
    assert missing.status_code == 404
    assert isinstance(missing.parsed, Error)
    assert missing.parsed.code == "NOT_FOUND"
    assert missing.parsed.message == "Article 424242 does not exist."
    assert missing.parsed.details.to_dict() == {}
