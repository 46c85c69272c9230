"""The report card run by refapi's own client (client.py; docs/lab.md, "A report
card for clients"):

    python examples/grade_refapi_client.py http://127.0.0.1:8000

refapi's client is a client of refapi's API, which answers no redirect and asks
for no cache, cookie or partial download: the run skips those checks, and the
client passes every one that applies to it (tests/e2e/test_grade.py holds it
there). It waits for Retry-After and sends Accept; it asks for no coding
(Accept-Encoding: identity, as Python's http.client does) and does not send a
POST again after an answer that does not say it was not acted on (a 504), so the
gzip and idempotency checks do not apply either.
"""

from __future__ import annotations

import sys

from refapi.client import Client, RequestFailed, retry_transient

# What refapi's client does not do: follow redirects, revalidate, resume, keep cookies.
SKIP = ",".join((
    "see-other", "redirect-limit", "cross-origin-authorization", "revalidate",
    "resume", "cookie-path",
))  # fmt: skip


def run_card(base: str) -> list[dict[str, str]]:
    client = Client(base, retry_on=retry_transient)
    run = client.request("POST", f"/lab/grade?skip={SKIP}").json()
    for task in run["tasks"]:
        path = task["url"].removeprefix(base)
        try:
            answer = client.request(task["method"], path,
                                    headers={"Idempotency-Key": run["id"]})  # fmt: skip
        except RequestFailed:
            continue  # not sent again: its answer did not say it was not done
        if task["check"] == "gzip":
            client.request("GET", answer.json()["next"].removeprefix(base))
    checks: list[dict[str, str]] = client.request(
        "GET", run["score"].removeprefix(base)
    ).json()["checks"]
    return checks


if __name__ == "__main__":
    for check in run_card(sys.argv[1].rstrip("/")):
        print(check["status"], check["check"], "-", check["did"])
