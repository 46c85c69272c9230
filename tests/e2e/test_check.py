"""``refapi check URL`` against a live gunicorn: the docs' portable examples pass,
the writes leave no user behind, and a difference is a line naming the example
and exit 1 (docs/operating.md, "Checking a deployment")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from refapi import check
from tests.e2e import test_doc_examples
from tests.e2e.test_doc_examples import PATH, serve, start

work = test_doc_examples.work  # the fixture: a folder laid out as a checkout

pytestmark = pytest.mark.e2e

REFAPI = str(Path(sys.prefix) / "bin" / "refapi")


def call(method: str, url: str, body: object = None, token: str = "") -> object:
    status, answer = check.call(method, url, body, token)
    assert status == 200, (status, answer)
    return answer


def admin_token(base: str, work: Path) -> str:
    password = (work / "data" / "admin-password.txt").read_text().splitlines()[1]
    body = {"email": "admin@localhost", "password": password}
    return call("POST", f"{base}/api/login", body)["token"]


def refapi_check(*args: str, token: str = "", cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": PATH, "REFAPI_CHECK_TOKEN": token}
    return subprocess.run(
        [REFAPI, "check", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def test_the_examples_pass_and_the_writes_leave_no_user(gunicorn, work, tmp_path):
    server = start(gunicorn, work, "README.md")
    token = admin_token(server.base_url, work)
    elsewhere = tmp_path / "ci"  # a deployment's CI job, no checkout
    elsewhere.mkdir()
    done = refapi_check(server.base_url, "--writes", token=token, cwd=elsewhere)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("ok      ") for line in lines)
    ran = {line.split()[1].split(":")[0] for line in lines}
    assert ran == {"README.md", "docs/api.md", "docs/authentication.md", "docs/lab.md"}
    users = call("GET", f"{server.base_url}/api/users?limit=100", token=token)
    assert [user["email"] for user in users["data"]] == ["admin@localhost"]
    assert list(elsewhere.iterdir()) == []  # nothing written where it ran


def test_without_writes_or_a_token_only_the_reads_run(gunicorn, work, tmp_path):
    server = start(gunicorn, work, "README.md")
    done = refapi_check(server.base_url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    # README.md's examples all write; the admin's are authentication.md's last.
    assert "README.md" not in done.stdout
    assert done.stdout.count("docs/authentication.md") == 5  # field and the 401s


DRIFTED = """\
```sh portable
curl -s "$BASE/v1/todos/1"; echo
```

```output
{"userId":1,"id":1,"title":"a title nobody wrote","completed":false}
```

```sh portable
curl -s -o /dev/null -w '%{http_code}\\n' "$BASE/v1/todos/2"
```

```output
200
```

```sh
echo not portable, never run
```
"""


def test_a_difference_is_a_line_naming_the_example_and_exit_1(gunicorn, work, capsys):
    server = start(gunicorn, work, "README.md")
    assert check.check(server.base_url, texts={"drifted.md": DRIFTED}) == 1
    said = capsys.readouterr().out.splitlines()
    assert said[:2] == ["differs drifted.md:1", "ok      drifted.md:9"]
    assert (
        '-{"userId":1,"id":1,"title":"a title nobody wrote","completed":false}' in said
    )


def test_a_missing_tool_is_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(check.shutil, "which", lambda tool: None)
    assert check.main("http://127.0.0.1:9", writes=False) == 2
    assert (
        capsys.readouterr().out
        == "refapi check: the examples need bash, curl, python3\n"
    )


def test_two_runs_with_writes_in_a_row_both_pass_and_leave_no_user(
    gunicorn, work, tmp_path
):
    # make run's defaults: five registrations an hour an address, ten logins a
    # minute; the address has already registered two accounts (a person's first
    # steps in the README and the API guide).
    server = serve(gunicorn, work, {})
    token = admin_token(server.base_url, work)
    for name in ("first", "second"):
        body = {"email": f"{name}@example.org", "password": "correct-horse-battery-9"}
        assert check.call("POST", f"{server.base_url}/api/users", body)[0] == 201
    for _ in range(2):
        done = refapi_check(server.base_url, "--writes", token=token, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, ""), done.stdout
    users = call("GET", f"{server.base_url}/api/users?limit=100", token=token)
    emails = [user["email"] for user in users["data"]]
    assert emails == ["admin@localhost", "first@example.org", "second@example.org"]


def test_an_unreachable_url_is_one_line_and_exit_2(tmp_path):
    done = refapi_check("http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        "refapi check: cannot reach http://127.0.0.1:9: Connection refused"
    ]


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://127.0.0.1/", "http://user@127.0.0.1:9",
     "http://127.0.0.1:9/?a=1", "http://127.0.0.1:9/a b", "http://a\"b/", "127.0.0.1",
     "http://"],
    ids=["file", "ftp", "user", "query", "space", "quote", "no-scheme", "no-host"],
)  # fmt: skip
def test_a_url_it_cannot_check_is_one_line_and_exit_2(url, capsys):
    assert check.check(url, texts={}) == 2
    assert capsys.readouterr().out == (
        f"refapi check: {url} is not a URL it can check: http(s)://host[:port][/path]\n"
    )


def test_a_url_s_control_characters_are_escaped_in_its_refusal(capsys):
    assert check.check("http://\x1b]0;PWNED\x07\x1b[2J\x9b/", texts={}) == 2
    assert capsys.readouterr().out == (
        "refapi check: http://\\x1b]0;PWNED\\x07\\x1b[2J\\x9b/ is not a URL it"
        " can check: http(s)://host[:port][/path]\n"
    )


def test_an_example_with_an_unquoted_expansion_is_refused_and_none_runs(
    tmp_path, capsys
):
    ran = tmp_path / "ran"
    text = f"```sh portable\ntouch {ran}\n```\n\n```sh portable\ncurl -s $BASE\n```\n"
    assert check.check("http://127.0.0.1:9", texts={"u.md": text}) == 2
    assert capsys.readouterr().out.splitlines() == [
        "refapi check: an example is not safe to run, none was:",
        "u.md:6: $BASE is not quoted (in double quotes, what it holds stays one word)",
    ]
    assert not ran.exists()
