"""``python -m refapi``: the operator's reset command."""

from __future__ import annotations

import pytest

from refapi.__main__ import main as reset_command
from refapi.config import shown_url


def test_the_reset_command_names_itself_as_it_is_run(capsys):
    assert reset_command(["resat"]) == 2
    assert capsys.readouterr().err == "usage: python -m refapi reset\n"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sqlite:///data/refapi.db", "sqlite:///data/refapi.db"),
        ("postgresql://app@db/refapi", "postgresql://app@db/refapi"),
        (
            "postgresql://app:s3cret@db:5432/refapi",
            "postgresql://app:***@db:5432/refapi",
        ),
        ("postgresql://app:p@ss:w@db/refapi", "postgresql://app:***@db/refapi"),
        ("postgres://:s3cret@db/refapi", "postgres://:***@db/refapi"),
        (
            "postgresql://db/refapi?sslmode=require&password=s3cret&x=1",
            "postgresql://db/refapi?sslmode=require&password=***&x=1",
        ),
    ],
)
def test_a_url_is_shown_without_its_password(url, shown):
    assert shown_url(url) == shown


def test_the_reset_command_names_the_database_without_its_password(
    database_url, monkeypatch, capsys
):
    monkeypatch.setenv("DATABASE_URL", database_url)
    assert reset_command(["reset"]) == 0
    said = capsys.readouterr().out
    assert said == f"reset {shown_url(database_url)} to the seed\n"


def test_the_reset_command_refuses_a_database_url_no_backend_reads_in_one_line(
    monkeypatch,
):
    monkeypatch.setenv("DATABASE_URL", "mysql://app:s3cret@db/refapi")
    with pytest.raises(SystemExit) as stopped:  # exit status 1, the line on stderr
        reset_command(["reset"])
    said = str(stopped.value.code)
    assert said.startswith("refapi: DATABASE_URL has an unknown scheme, 'mysql'")
    assert "\n" not in said and "s3cret" not in said
