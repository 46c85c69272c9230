"""The ``refapi`` command: what a self-hoster types (docs/operating.md, "The refapi
command").

- ``refapi serve [GUNICORN_OPTION ...]`` replaces itself with gunicorn, serving
  ``create_app()`` with the settings shipped in the package (``gunicorn.conf.py``),
  so an installed wheel serves with no checkout. Bind, workers and data folder come
  from the environment (``REFAPI_BIND``, ``REFAPI_WORKERS``, ``REFAPI_DATA_DIR``);
  gunicorn's own options, given after ``serve``, win over the shipped ones.
  ``refapi serve --server granian`` (or ``REFAPI_SERVER=granian``) serves on
  Granian instead, from the same settings (``serving/granian.py``).
- ``refapi reset`` puts the records back to the seed, also while serving;
  ``refapi reset --all`` also removes every account but the first admin, every
  credential and every rate limit and login counter (a fresh start).
- ``refapi check URL`` runs the docs' portable examples against a deployment.
- ``refapi backup PATH`` copies the SQLite database to a new file while serving.
- ``refapi admin reset-password EMAIL`` gives an account a new password, shown
  once, and ends every login of it (the first admin's, when its file is lost).

``python -m refapi`` is the same command.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from . import check
from .config import SERVER_THREADS, VERSION, Config, shown_url
from .first_admin import UnknownEmail, reset_password
from .startup import check_start, database_path_problem
from .storage import StorageUnavailable, sqlite_file
from .storage.sqlite import SqliteStore

# The shipped gunicorn settings: a file of the package, beside this one.
GUNICORN_SETTINGS = Path(__file__).with_name("gunicorn.conf.py")
APP = "refapi:create_app()"
SERVERS = tuple(SERVER_THREADS)


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="refapi",
        description="The reference REST API service.",
        epilog="Settings come from the environment (docs/configuration.md).",
    )
    command.add_argument("--version", action="version", version=f"refapi {VERSION}")
    verbs = command.add_subparsers(dest="verb", required=True, metavar="COMMAND")
    serving = verbs.add_parser(
        "serve",
        help="serve with gunicorn (or Granian) and the shipped settings",
        description="Serve create_app() with gunicorn and the shipped settings"
        " (REFAPI_BIND, default 127.0.0.1:8000; REFAPI_WORKERS; REFAPI_THREADS;"
        " REFAPI_WORKER_TIMEOUT; REFAPI_DATA_DIR). Options after serve go to"
        " gunicorn and win over the shipped ones; Granian takes none.",
    )
    serving.add_argument(
        "--server",
        choices=SERVERS,
        help="gunicorn (the default, or REFAPI_SERVER) or granian (the extra fast)",
    )
    reset = verbs.add_parser(
        "reset",
        help="put the records back to the seed (accounts stay), also while serving",
        description="Put the records back to the seed, also while serving:"
        " accounts and credentials stay (unless --all), every cursor issued"
        " before is refused.",
    )
    reset.add_argument(
        "--all",
        action="store_true",
        dest="everything",
        help="start afresh: also remove every account but the first admin (the"
        " admin with the lowest id; its password stays) and every token, session,"
        " API key and OAuth client; every rate-limit bucket starts full again and"
        " every count of failed logins at zero",
    )
    checking = verbs.add_parser(
        "check",
        help="run the docs' portable examples against a deployment (bash, curl)",
        description="Run the README's and the guides' examples marked portable"
        " against the service at URL; one line an example, exit 1 on a difference"
        " (docs/operating.md, 'Checking a deployment'). With REFAPI_CHECK_TOKEN, an"
        " admin's Bearer token, the admin examples too.",
    )
    checking.add_argument("url", metavar="URL", help="the service's base URL")
    checking.add_argument(
        "--writes",
        action="store_true",
        help="also the examples that write, as random users deleted at the end",
    )
    backup = verbs.add_parser(
        "backup",
        help="copy the SQLite database to a new file, also while serving",
        description="Copy the SQLite database DATABASE_URL names to PATH, a new"
        " file, with SQLite's online backup: consistent while the service writes,"
        " every write acknowledged before it began in it (docs/operating.md,"
        " 'Backups and restore'). On PostgreSQL, use pg_dump (exit status 2).",
    )
    backup.add_argument("path", metavar="PATH", help="the new file")
    admin = verbs.add_parser(
        "admin",
        help="look after accounts: reset-password EMAIL",
        description="Look after the service's accounts from the machine it runs on.",
    )
    tasks = admin.add_subparsers(dest="task", required=True, metavar="TASK")
    resetting = tasks.add_parser(
        "reset-password",
        help="a new password for an account, shown once; every login of it ended",
        description="Give the account of EMAIL a new random password, shown once,"
        " and end every token and session of it (its API keys stay, as after a"
        " password change). The first admin's password file, if it held the old"
        " password, is removed.",
    )
    resetting.add_argument("email", metavar="EMAIL")
    return command


def serve(server: str | None, options: list[str]) -> int:
    """Serve on ``server``, else REFAPI_SERVER's, else gunicorn; the workers' apps
    read which from the environment, as the rest of the settings."""
    if server:
        os.environ["REFAPI_SERVER"] = server
    if os.environ.get("REFAPI_SERVER", "").strip() == "granian":
        if options:
            raise SystemExit(
                f"refapi: Granian takes no options after serve ({' '.join(options)}):"
                " set REFAPI_BIND, REFAPI_WORKERS, REFAPI_THREADS instead"
            )
        from .app import create_app, prepare_for_workers
        from .serving import granian

        config = check_start()
        # What every worker's app makes alike, made once for them to fork with, as
        # gunicorn.conf.py does (docs/benchmarks.md, "Made once, in the master").
        prepare_for_workers(config)
        return granian.serve(config, create_app)
    argv = [sys.executable, "-m", "gunicorn", "--config", str(GUNICORN_SETTINGS)]
    os.execv(sys.executable, [*argv, *options, APP])
    return 1  # not reached: execv replaces the process or raises


@contextlib.contextmanager
def said_once() -> Iterator[None]:
    """A command says in one line what keeps it from its storage; what the store
    logs of the same as it opens (a warning, "cannot prepare the database") would
    be a second, so only the service's errors are shown while it runs."""
    log = logging.getLogger("refapi")
    before = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)


def no_database(config: Config) -> bool:
    """Whether ``config`` names a SQLite file that is not there, or cannot be (a
    folder at its path, as ``refapi serve`` says it), said if so: a command never
    makes a database only to work on it. The service's is elsewhere (a
    DATABASE_URL not exported to this shell), or was never made."""
    path = sqlite_file(config.database_url)
    if path is None:
        return False
    problem = database_path_problem(config.database_url)
    if problem is None and not os.path.exists(path):
        problem = (
            f"no database at {path}: set DATABASE_URL to the one the service uses,"
            " or start the service once to make it"
        )
    if problem is not None:
        print(f"refapi: {problem}", file=sys.stderr)
        return True
    return False


def reset(everything: bool) -> int:
    config = check_start()  # a configuration that cannot work: one line, exit 1
    if no_database(config):
        return 1
    try:
        store = config.open_store()
        try:
            store.reset(everything)
        finally:
            store.close()
    except StorageUnavailable as exc:  # an outage: say so in one line
        print(f"refapi: cannot reset now: {exc}", file=sys.stderr)
        return 1
    said = f"reset {shown_url(config.database_url)} to the seed"
    if everything:
        said += ", with every credential and every account but the first admin removed"
    print(said)
    return 0


def backup(target: str) -> int:
    config = check_start(connect=False)  # PostgreSQL is refused, not reached
    path = sqlite_file(config.database_url)
    if path is None:
        print(
            "refapi: backup copies a SQLite database; this one is PostgreSQL's"
            f" ({shown_url(config.database_url)}): back it up with pg_dump"
            " (docs/several-hosts.md, 'Backups and restore')",
            file=sys.stderr,
        )
        return 2
    if no_database(config):
        return 1
    if not target:
        print("refapi: PATH is empty: name the new file", file=sys.stderr)
        return 1
    if os.path.lexists(target):
        print(
            f"refapi: {target} exists: a backup goes to a new file, never over one",
            file=sys.stderr,
        )
        return 1
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        print(f"refapi: {folder} is not a folder: make it first", file=sys.stderr)
        return 1
    try:
        store = SqliteStore(path)
        try:
            store.backup(target)
        finally:
            store.close()
    except StorageUnavailable as exc:  # an outage
        print(f"refapi: cannot back up now: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # PATH's folder: named as given, not the draft's name
        print(f"refapi: cannot write {target}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"backed up {shown_url(config.database_url)} to {target}")
    return 0


def reset_password_of(email: str) -> int:
    config = check_start()
    if no_database(config):
        return 1
    try:
        store = config.open_store()
        try:
            done = reset_password(store, config, email, time.time())
        finally:
            store.close()
    except UnknownEmail:
        print(f"refapi: no account has the email {email}", file=sys.stderr)
        return 1
    except StorageUnavailable as exc:
        print(f"refapi: cannot reset the password now: {exc}", file=sys.stderr)
        return 1
    print(
        f"the new password of {done.email}, shown once (every token and session"
        " of the account ended, its API keys kept):"
    )
    print(done.password)
    if done.removed is not None:
        print(f"removed {done.removed}, which held the old password")
    return 0


def main(argv: list[str] | None = None) -> int:
    command = parser()
    # What serve does not know is gunicorn's (--bind, --workers, ...), in its order.
    args, others = command.parse_known_args(argv)
    if args.verb == "serve":
        return serve(args.server, others)
    if others:
        command.error(f"unrecognized arguments: {' '.join(others)}")
    if args.verb == "check":
        return check.main(args.url, writes=args.writes)
    with said_once():
        if args.verb == "backup":
            return backup(args.path)
        if args.verb == "admin":
            return reset_password_of(args.email)
        return reset(args.everything)


if __name__ == "__main__":
    sys.exit(main())
