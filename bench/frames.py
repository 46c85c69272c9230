"""The frames from the WSGI entry to the SQL call of one request: how deep a reader
follows ``GET /v1/articles/1`` (and an authenticated ``POST /v1/articles``) before
the first statement reaches SQLite. Run: ``.venv/bin/python bench/frames.py``."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType

import webtest

from refapi import create_app
from refapi.config import Config


def frames_to_sql(app: webtest.TestApp, method: str, path: str, **kwargs) -> list:
    """The stack, outermost first, at the request's first ``execute`` on SQLite."""
    seen: list[list] = []

    def profile(frame: FrameType | None, event: str, arg: object) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "execute" and not seen:
            stack = []
            while frame is not None:
                stack.append(frame)
                frame = frame.f_back
            seen.append(stack[::-1])

    sys.setprofile(profile)
    try:
        app.request(path, method=method, **kwargs)
    finally:
        sys.setprofile(None)
    stack = seen[0]
    entry = next(
        i
        for i, f in enumerate(stack)
        if f.f_code.co_name == "__call__" and f.f_code.co_filename.endswith("app.py")
    )
    return stack[entry:]


def show(title: str, stack: list) -> None:
    root = str(Path(__file__).resolve().parent.parent)
    files = [f.f_code.co_filename for f in stack]
    print(f"{title}: {len(stack)} frames, {len(set(files))} files")
    for frame in stack:
        name = frame.f_code.co_filename.replace(root + "/", "")
        print(f"  {name}:{frame.f_lineno} {frame.f_code.co_qualname}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        config = Config(
            database_url=f"sqlite:///{folder}/refapi.db", data_dir=folder,
            admin_email="admin@example.com", admin_password="correct horse battery",
        )  # fmt: skip
        app = webtest.TestApp(create_app(config))
        token = app.post_json(
            "/api/login",
            {"email": "admin@example.com", "password": "correct horse battery"},
        ).json["token"]
        auth = {"Authorization": f"Bearer {token}"}
        article = {"title": "Hello", "tags": []}
        made = app.post_json("/v1/articles", article, headers=auth)
        app.get(f"/v1/articles/{made.json['id']}")  # warm: the first call opens
        app.reset()  # the login's session cookie: the GET is anonymous
        show("GET /v1/articles/1", frames_to_sql(app, "GET", "/v1/articles/1"))
        body = b'{"title": "Hello", "tags": []}'
        show(
            "POST /v1/articles (Bearer)",
            frames_to_sql(app, "POST", "/v1/articles", body=body, headers=auth,
                          content_type="application/json"),
        )  # fmt: skip


if __name__ == "__main__":
    main()
