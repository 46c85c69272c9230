"""``python -m refapi``: the operator's reset command."""

from __future__ import annotations

from refapi.__main__ import main as reset_command


def test_the_reset_command_names_itself_as_it_is_run(capsys):
    assert reset_command(["resat"]) == 2
    assert capsys.readouterr().err == "usage: python -m refapi reset\n"
