"""The report card run by requests, as a careful client does each task (docs/lab.md,
"A report card for clients"):

    python examples/grade_requests.py http://127.0.0.1:8000

It prints each check's status and what the client did. requests follows a 303
with GET, stops after 30 redirects, drops Authorization on a redirect to another
host, decodes gzip and keeps cookies to their Path by itself; waiting for
Retry-After takes urllib3's Retry, and the rest (revalidating with an ETag,
resuming a download, sending a POST again only with its key) is this program's.
"""

from __future__ import annotations

import sys
import uuid

import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

TIMEOUT = 10


def run_card(base: str, skip: str = "") -> list[dict[str, str]]:
    """Start a run at ``base``, do each of its tasks, and return the score's checks."""
    session = requests.Session()
    # GETs answered 429 or 503 are asked again after Retry-After (urllib3's Retry
    # honours it), three times at most; a POST is never sent again by the adapter.
    retry = Retry(total=3, status_forcelist=(429, 503), backoff_factor=0.5)
    session.mount(base, HTTPAdapter(max_retries=retry))
    started = session.post(f"{base}/lab/grade", params={"skip": skip}, timeout=TIMEOUT)
    started.raise_for_status()
    for task in started.json()["tasks"]:
        DO[task["check"]](session, task["url"])
    score = session.get(started.json()["score"], timeout=TIMEOUT)
    checks: list[dict[str, str]] = score.json()["checks"]
    return checks


def see_other(session: requests.Session, url: str) -> None:
    session.post(url, timeout=TIMEOUT)  # the 303 is followed with GET


def redirect_limit(session: requests.Session, url: str) -> None:
    try:
        session.get(url, timeout=TIMEOUT)
    except requests.TooManyRedirects:
        pass  # stopped at session.max_redirects (30)


def cross_origin(session: requests.Session, url: str) -> None:
    # requests drops Authorization when a redirect leads to another host.
    session.get(url, headers={"Authorization": "Bearer grade"}, timeout=TIMEOUT)


def retried(session: requests.Session, url: str) -> None:
    session.get(url, timeout=TIMEOUT)  # the adapter waits for Retry-After


def revalidate(session: requests.Session, url: str) -> None:
    first = session.get(url, timeout=TIMEOUT)
    again = session.get(url, headers={"If-None-Match": first.headers["ETag"]},
                        timeout=TIMEOUT)  # fmt: skip
    assert again.status_code == 304  # noqa: S101 - the copy in hand is current


def resume(session: requests.Session, url: str) -> None:
    got, etag = b"", None
    try:
        with session.get(url, stream=True, timeout=TIMEOUT) as answer:
            etag = answer.headers["ETag"]
            for chunk in answer.iter_content(1024):
                got += chunk
    except requests.RequestException:
        # The connection dropped: ask for the rest, if the file is still the same.
        rest = session.get(
            url, headers={"Range": f"bytes={len(got)}-", "If-Range": etag or ""},
            timeout=TIMEOUT,
        )  # fmt: skip
        got += rest.content


def gzip_body(session: requests.Session, url: str) -> None:
    session.get(session.get(url, timeout=TIMEOUT).json()["next"], timeout=TIMEOUT)


def idempotency(session: requests.Session, url: str) -> None:
    # One key for every attempt: a POST sent again is then done once at most.
    key = str(uuid.uuid4())
    for _ in range(3):
        try:
            answer = session.post(
                url, json={"item": 1}, headers={"Idempotency-Key": key}, timeout=TIMEOUT
            )
        except requests.ConnectionError:
            continue  # no answer: it may have been done, and the key says so
        if answer.status_code not in (502, 503, 504):
            return


def accept(session: requests.Session, url: str) -> None:
    session.get(url, headers={"Accept": "application/json"}, timeout=TIMEOUT)


def cookie_path(session: requests.Session, url: str) -> None:
    session.get(url, timeout=TIMEOUT)  # the session keeps the cookie, to its Path
    root = url.removesuffix("/set")
    session.get(f"{root}/kept", timeout=TIMEOUT)
    session.get(f"{root}/other", timeout=TIMEOUT)


DO = {
    "see-other": see_other, "redirect-limit": redirect_limit,
    "cross-origin-authorization": cross_origin, "retry-after-429": retried,
    "retry-after-503": retried, "revalidate": revalidate, "resume": resume,
    "gzip": gzip_body, "idempotency-key": idempotency, "accept": accept,
    "cookie-path": cookie_path,
}  # fmt: skip


if __name__ == "__main__":
    for check in run_card(sys.argv[1].rstrip("/")):
        print(check["status"], check["check"], "-", check["did"])
