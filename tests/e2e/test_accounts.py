"""Accounts under concurrency, over gunicorn with several workers: failed logins
are reserved before the password is checked, and the last admin stays an admin."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.conftest import ADMIN
from tests.e2e.harness import raw_request, simultaneous

pytestmark = pytest.mark.e2e

JSON_HEADERS = {"Content-Type": "application/json"}
# A hash slow enough (tens of ms) that guesses checked before their failures were
# counted would pile up past the limit, as they did.
SLOW_HASH = {"REFAPI_PASSWORD_HASH": "pbkdf2:sha256:100000"}


def test_concurrent_wrong_passwords_from_one_address_get_five_tries(gunicorn):
    server = gunicorn(workers=4, env=SLOW_HASH)
    body = json.dumps({"email": ADMIN["email"], "password": "a-wrong-guess"}).encode()
    guess = raw_request("POST", "/api/login", JSON_HEADERS, body)
    answers = simultaneous(server, [guess] * 40)
    statuses = Counter(answer.status for answer in answers)
    assert statuses == {401: 5, 429: 35}, statuses
    assert server.log_failures() == []


def _bearer(server, pool, account: dict[str, str]) -> str:
    """``Bearer <token>`` of ``account``, logged in over HTTP."""
    login = pool.request(
        "POST", server.url("/api/login"), body=json.dumps(account),
        headers=JSON_HEADERS,
    )  # fmt: skip
    assert login.status == 200, login.data
    return "Bearer " + login.json()["token"]


def _put(user_id: int, token: str, user: dict, role: str) -> bytes:
    body = {"email": user["email"], "firstName": "", "lastName": "", "role": role}
    headers = {**JSON_HEADERS, "Authorization": token}
    return raw_request(
        "PUT", f"/api/users/{user_id}", headers, json.dumps(body).encode()
    )


def test_two_admins_demoting_each_other_at_once_leave_one(gunicorn, pool):
    server = gunicorn(workers=2)
    second = {"email": "second@example.com", "password": "second-password"}
    made = pool.request(
        "POST", server.url("/api/users"), body=json.dumps({**second, "role": "admin"}),
        headers=JSON_HEADERS,
    )  # fmt: skip
    assert made.status == 201, made.data
    admins = {1: {"email": ADMIN["email"]}, made.json()["id"]: second}
    first_token = server.authorization
    second_token = _bearer(server, pool, second)
    (one, two) = admins
    for _ in range(5):
        # Each demotes the other at the same moment: one of them must stay.
        answers = simultaneous(
            server,
            [
                _put(two, first_token, admins[two], "user"),
                _put(one, second_token, admins[one], "user"),
            ],
        )
        assert sorted(answer.status for answer in answers) == [200, 409]
        refused = next(answer for answer in answers if answer.status == 409)
        assert json.loads(refused.body)["details"] == {"reason": "last admin"}
        users = pool.request("GET", server.url("/api/users")).json()["data"]
        roles = {user["id"]: user["role"] for user in users}
        assert sorted(roles.values()) == ["admin", "user"]
        # The one still an admin makes the other an admin again.
        demoted = one if roles[one] == "user" else two
        token = second_token if demoted == one else first_token
        [again] = simultaneous(server, [_put(demoted, token, admins[demoted], "admin")])
        assert again.status == 200, again.body
    assert server.log_failures() == []


def test_every_worker_sees_a_change_to_a_credential_it_remembers(
    gunicorn, pool, server_name
):
    """Workers remember the credentials they found (docs/authentication.md,
    "Remembered credentials"): a role change, a password change and a deleted
    user each take effect at once on all four, which had each just used them."""
    server = gunicorn(workers=4, server=server_name)
    user = {"email": "remembered@example.com", "password": "a long enough password"}
    made = pool.request(
        "POST", server.url("/api/users"), body=json.dumps(user), headers=JSON_HEADERS
    )
    assert made.status == 201, made.data
    user_id = made.json()["id"]
    token = _bearer(server, pool, user)
    key = pool.request(
        "POST", server.url("/api/keys"), headers=JSON_HEADERS,
        body=json.dumps({"name": "theirs", "userId": user_id}),
    ).json()["key"]  # fmt: skip

    def statuses(path: str, credential: dict[str, str]) -> set[int]:
        """Sixteen requests at once, each on a connection of its own: spread over
        the workers, so each remembers (or is refuted on) the credential."""
        request = raw_request("GET", path, credential)
        answers = simultaneous(server, [request] * 16, admin=False)
        return {answer.status for answer in answers}

    by_token, by_key = {"Authorization": token}, {"X-API-Key": key}
    assert statuses("/api/keys", by_token) == {403}  # a user: not the admin's route
    assert statuses("/api/keys", by_key) == {403}
    body = {"email": user["email"], "firstName": "", "lastName": ""}
    promote = json.dumps({**body, "role": "admin"})
    answer = pool.request(
        "PUT", server.url(f"/api/users/{user_id}"), body=promote, headers=JSON_HEADERS
    )
    assert answer.status == 200, answer.data
    assert statuses("/api/keys", by_token) == {200}
    assert statuses("/api/keys", by_key) == {200}
    new_password = json.dumps({**body, "role": "user", "password": "another password!"})
    answer = pool.request(
        "PUT", server.url(f"/api/users/{user_id}"), body=new_password,
        headers=JSON_HEADERS,
    )  # fmt: skip
    assert answer.status == 200, answer.data
    assert statuses("/api/users", by_token) == {401}  # the login ended
    assert statuses("/api/keys", by_key) == {403}  # a user again
    gone = pool.request("DELETE", server.url(f"/api/users/{user_id}"))
    assert gone.status == 204
    assert statuses("/api/users", by_key) == {401}
    assert server.log_failures() == []
