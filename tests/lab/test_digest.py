"""The lab's Digest challenge (lab/digest.py; docs/lab.md, "Digest
authentication"): /lab/digest-auth/{qop}/{user}/{passwd}[/{algorithm}[/{stale_after}]],
in process. The client's side is worked out here from RFC 7616 with hashlib, apart
from the lab's code: the challenge read, A1, A2 and the response hashed, the
Authorization field written."""

from __future__ import annotations

import hashlib
import re

import pytest
import webtest

from refapi.lab.digest import ALGORITHMS, MAX_STALE_AFTER, NONCE_LIFETIME
from tests.helpers import assert_error, operations_inline

REALM = "refapi lab"
PATH = "/lab/digest-auth/auth/ada/s3cret"
HASHES = {
    "MD5": "md5",
    "SHA-256": "sha256",
    "SHA-512": "sha512",
    "SHA-512-256": "sha512_256",
}
# The challenge's parameters, as RFC 7616 section 3.3 writes them: a quoted
# string, or a token.
PARAMETER = re.compile(r'(\w+)=(?:"([^"]*)"|([^",\s]+))')


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    return make_app(anonymous=True)


def challenge(app: webtest.TestApp, path: str = PATH, **kwargs) -> dict[str, str]:
    """The challenge of a request without credentials, by parameter."""
    answer = app.get(path, status=401, **kwargs)
    scheme, _, rest = answer.headers["WWW-Authenticate"].partition(" ")
    assert scheme == "Digest"
    return {name: quoted or token for name, quoted, token in PARAMETER.findall(rest)}


def h(algorithm: str, data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.new(HASHES[algorithm.removesuffix("-sess")], raw).hexdigest()


def credentials(
    asked: dict[str, str],
    uri: str,
    user: str = "ada",
    password: str = "s3cret",
    *,
    method: str = "GET",
    qop: str = "auth",
    nc: int = 1,
    cnonce: str = "0a4f113b",
    body: bytes = b"",
    written: dict[str, str] | None = None,
) -> dict[str, str]:
    """``Authorization`` answering ``asked`` (RFC 7616 section 3.4), as a client
    sends it; ``written`` replaces parameters as written."""
    algorithm, nonce = asked["algorithm"], asked["nonce"]
    a1 = h(algorithm, f"{user}:{asked['realm']}:{password}")
    if algorithm.endswith("-sess"):  # section 3.4.2
        a1 = h(algorithm, f"{a1}:{nonce}:{cnonce}")
    a2 = f"{method}:{uri}"
    if qop == "auth-int":  # section 3.4.3
        a2 += ":" + h(algorithm, body)
    count = f"{nc:08x}"
    response = h(algorithm, f"{a1}:{nonce}:{count}:{cnonce}:{qop}:{h(algorithm, a2)}")
    parameters = {
        "username": f'"{user}"', "realm": f'"{asked["realm"]}"',
        "nonce": f'"{nonce}"', "uri": f'"{uri}"', "response": f'"{response}"',
        "algorithm": algorithm, "qop": qop, "nc": count, "cnonce": f'"{cnonce}"',
        "opaque": f'"{asked["opaque"]}"', **(written or {}),
    }  # fmt: skip
    field = "Digest " + ", ".join(
        f"{name}={value}" for name, value in parameters.items()
    )
    # As on the wire: UTF-8 bytes, which the server hands over as latin-1.
    return {"Authorization": field.encode().decode("latin-1")}


def test_the_client_side_here_gives_rfc_7616_s_own_examples():
    # Section 3.9.1: Mufasa's request, by MD5 and by SHA-256.
    asked = {
        "realm": "http-auth@example.org", "opaque": "",
        "nonce": "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
    }  # fmt: skip
    cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
    for algorithm, response in [
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
    ]:
        sent = credentials(
            {**asked, "algorithm": algorithm}, "/dir/index.html", "Mufasa",
            "Circle of Life", cnonce=cnonce,
        )  # fmt: skip
        assert f'response="{response}"' in sent["Authorization"]
    # Section 3.9.2: SHA-512-256 is SHA-512/256 (FIPS 180-4), not SHA-256 cut
    # short, as its userhash of "Jäsøn Doe:api@example.org" shows.
    assert h("SHA-512-256", "Jäsøn Doe:api@example.org") == (
        "793263caabb707a56211940d90411ea4a575adeccb7e360aeb624ed06ece9b0b"
    )


def fake_cookie(answer: webtest.TestResponse, prefix: str = "") -> None:
    assert answer.headers.getall("Set-Cookie") == [
        f"fake=fake_value; Path={prefix}/lab/"
    ]


@pytest.mark.parametrize("qop", ["auth", "auth-int"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_path_s_user_and_password_authenticate(anon, algorithm, qop):
    path = f"/lab/digest-auth/{qop}/ada/s3cret/{algorithm}"
    asked = challenge(anon, path)
    assert asked["algorithm"] == algorithm and asked["qop"] == qop
    answer = anon.get(path, headers=credentials(asked, path, qop=qop))
    assert answer.status_int == 200
    assert answer.json == {"authenticated": True, "user": "ada"}
    assert answer.headers["Cache-Control"] == "no-store"
    fake_cookie(answer)


def test_without_credentials_it_is_the_lab_s_digest_challenge(anon):
    answer = anon.get(PATH, status=401)
    assert_error(answer, 401, "UNAUTHENTICATED")
    assert re.fullmatch(
        'Digest realm="refapi lab", qop="auth", nonce="[0-9a-f]{64}", '
        'opaque="[0-9a-f]+", algorithm=MD5, charset=UTF-8',
        answer.headers["WWW-Authenticate"],
    )
    assert answer.headers["Cache-Control"] == "no-store"
    fake_cookie(answer)
    # A new nonce each time, in the same second too: each request's own.
    assert challenge(anon)["nonce"] != challenge(anon)["nonce"]


def test_the_paths_that_name_less_are_md5_and_never_stale(anon):
    for path in (PATH, PATH + "/MD5", PATH + "/MD5/never"):
        asked = challenge(anon, path)
        assert asked["algorithm"] == "MD5"
        many = credentials(asked, path, nc=MAX_STALE_AFTER + 1)
        assert anon.get(path, headers=many).json["user"] == "ada"


def test_both_qops_offered_either_answers(anon):
    path = "/lab/digest-auth/auth,auth-int/ada/s3cret/SHA-256"
    asked = challenge(anon, path)
    assert asked["qop"] == "auth, auth-int"
    for qop in ("auth", "auth-int"):
        anon.get(path, headers=credentials(asked, path, qop=qop), status=200)


def test_auth_int_hashes_the_body_sent(anon):
    path = "/lab/digest-auth/auth-int/ada/s3cret"
    asked = challenge(anon, path)
    body = b'{"note": "signed"}'
    signed = credentials(asked, path, qop="auth-int", body=body)
    answer = anon.request(path, method="GET", body=body, headers=signed)
    assert answer.status_int == 200
    other = anon.request(path, method="GET", body=b"{}", headers=signed, status=401)
    assert "stale" not in other.headers["WWW-Authenticate"]


def test_head_is_answered_as_get(anon):
    asked = challenge(anon)
    answer = anon.head(PATH, headers=credentials(asked, PATH, method="HEAD"))
    assert answer.status_int == 200 and answer.body == b""


@pytest.mark.parametrize(
    ("user", "password"),
    [("ada", "wrong"), ("bob", "s3cret"), ("Ada", "s3cret")],
    ids=["wrong password", "wrong user", "user in another case"],
)
def test_wrong_credentials_are_challenged_again_never_stale(anon, user, password):
    asked = challenge(anon)
    sent = credentials(asked, PATH, user, password)
    answer = anon.get(PATH, headers=sent, status=401)
    assert_error(answer, 401, "UNAUTHENTICATED")
    assert "stale" not in answer.headers["WWW-Authenticate"]
    fake_cookie(answer)


def test_the_service_s_own_admin_is_nobody_to_the_lab(app):
    # The fixture's app sends the seeded admin's Bearer token: no Digest met.
    answer = app.get("/lab/digest-auth/auth/admin/admin", status=401)
    assert answer.headers["WWW-Authenticate"].startswith('Digest realm="refapi lab"')


def stale(answer: webtest.TestResponse) -> bool:
    header = answer.headers["WWW-Authenticate"]
    return header.endswith(", stale=true")


def test_a_nonce_of_another_path_is_stale_to_a_right_answer(anon):
    other = "/lab/digest-auth/auth/ada/s3cret/MD5"  # the same user, password, hash
    asked = challenge(anon, other)
    answer = anon.get(PATH, headers=credentials(asked, PATH), status=401)
    assert stale(answer)
    assert_error(answer, 401, "UNAUTHENTICATED")
    # The new nonce is this path's.
    renewed = challenge(anon)
    assert anon.get(PATH, headers=credentials(renewed, PATH)).status_int == 200


def test_a_nonce_is_stale_once_older_than_its_lifetime(anon, clock):
    asked = challenge(anon)
    clock.advance(NONCE_LIFETIME)
    assert anon.get(PATH, headers=credentials(asked, PATH, nc=1)).status_int == 200
    clock.advance(1)  # replayed later: the nonce has expired
    answer = anon.get(PATH, headers=credentials(asked, PATH, nc=2), status=401)
    assert stale(answer)


def test_a_nonce_the_lab_did_not_make_is_stale_to_a_right_answer(anon):
    asked = challenge(anon)
    nonce = asked["nonce"]
    # Its time moved on by one second: the MAC no longer matches.
    forged = nonce[:15] + format((int(nonce[15], 16) + 1) % 16, "x") + nonce[16:]
    for made_up in (forged, "0" * 64, "not-a-nonce"):
        sent = credentials({**asked, "nonce": made_up}, PATH)
        assert stale(anon.get(PATH, headers=sent, status=401))
        # A wrong password to it is no stale nonce: the password is what is wrong.
        wrong = credentials({**asked, "nonce": made_up}, PATH, password="wrong")
        assert not stale(anon.get(PATH, headers=wrong, status=401))


def test_another_secret_key_makes_other_nonces(make_app):
    asked = challenge(make_app(anonymous=True, secret_key=b"one key"))
    other = make_app(anonymous=True, secret_key=b"another key")
    assert stale(other.get(PATH, headers=credentials(asked, PATH), status=401))


def test_a_nonce_made_by_one_worker_is_good_on_another(make_app):
    # The lab stores nothing: its nonces carry their own state, signed with the
    # key every worker and host of the data shares.
    one, another = make_app(anonymous=True), make_app(anonymous=True)
    asked = challenge(one)
    assert another.get(PATH, headers=credentials(asked, PATH)).status_int == 200


@pytest.mark.parametrize("uses", [1, 3, MAX_STALE_AFTER])
def test_after_stale_after_requests_the_nonce_is_stale(anon, uses):
    path = f"/lab/digest-auth/auth/ada/s3cret/SHA-256/{uses}"
    asked = challenge(anon, path)
    for nc in range(1, uses + 1):
        assert anon.get(path, headers=credentials(asked, path, nc=nc)).status_int == 200
    answer = anon.get(path, headers=credentials(asked, path, nc=uses + 1), status=401)
    assert stale(answer)
    renewed = {**asked, "nonce": re.search('nonce="([^"]+)"', str(answer.headers))[1]}
    assert anon.get(path, headers=credentials(renewed, path, nc=1)).status_int == 200


def test_a_user_and_password_beyond_ascii_are_utf_8(anon):
    path = "/lab/digest-auth/auth/J%C3%A4s%C3%B8n/p%C3%A4ss/SHA-256"
    uri = path
    asked = challenge(anon, path)
    # In a quoted string, as UTF-8 (charset=UTF-8, section 4) ...
    sent = credentials(asked, uri, "Jäsøn", "päss")
    assert anon.get(path, headers=sent).json == {"authenticated": True, "user": "Jäsøn"}
    # ... or as username* (RFC 8187; section 4).
    starred = credentials(asked, uri, "Jäsøn", "päss", nc=2)
    field = starred["Authorization"].replace(
        'username="Jäsøn"'.encode().decode("latin-1"),
        "username*=UTF-8''J%C3%A4s%C3%B8n",
    )
    assert anon.get(path, headers={"Authorization": field}).status_int == 200


@pytest.mark.parametrize("prefix", ["", "/prod"])
def test_under_a_mount_point_the_uri_and_the_cookie_carry_it(anon, prefix):
    mounted = {"SCRIPT_NAME": prefix}
    asked = challenge(anon, extra_environ=mounted)
    sent = credentials(asked, prefix + PATH + "?x=1")
    answer = anon.get(PATH + "?x=1", headers=sent, extra_environ=mounted)
    assert answer.status_int == 200
    fake_cookie(answer, prefix)


@pytest.mark.parametrize(
    "uri",
    [PATH + "?x=1", "/lab/digest-auth/%61uth/ada/s3cret?x=%31",
     "http://localhost" + PATH + "?x=1", "HTTP://LocalHost:80" + PATH + "?x=1"],
    ids=["as sent", "encoded otherwise", "absolute form", "absolute, as written"],
)  # fmt: skip
def test_uri_names_the_request_s_path_and_query(anon, uri):
    asked = challenge(anon)
    answer = anon.get(PATH + "?x=1", headers=credentials(asked, uri))
    assert answer.status_int == 200


@pytest.mark.parametrize(
    "uri",
    [PATH, PATH + "?x=2", "/lab/digest-auth/auth/ada/other?x=1", "/lab/get?x=1", "*",
     "http://evil.example" + PATH + "?x=1", "https://localhost" + PATH + "?x=1",
     "http://localhost:8080" + PATH + "?x=1", "//evil.example" + PATH + "?x=1",
     "http://[::1" + PATH, "http://[zz]" + PATH + "?x=1", "http://localhost:x" + PATH],
    ids=["no query", "another query", "another path", "another route", "asterisk",
         "another host", "another scheme", "another port", "no scheme, a host",
         "an IPv6 host unclosed", "an IPv6 host not one", "a port not a number"],
)  # fmt: skip
def test_a_uri_of_another_resource_is_400(anon, uri):
    # RFC 7616 section 3.4.6: a uri that names another resource than the
    # request's is a bad request, even with a right response for it.
    asked = challenge(anon)
    answer = anon.get(PATH + "?x=1", headers=credentials(asked, uri), status=400)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert answer.json["details"]["errors"] == [
        {
            "field": "Authorization",
            "message": "uri must be this request's path and query",
        }
    ]


MALFORMED = {
    "another scheme": "Basic YWRhOnMzY3JldA==",
    "no parameters": "Digest",
    "a token": "Digest abc",
    "no nc": {"nc": ""},
    "nc of 7 digits": {"nc": "0000001"},
    "nc not hex": {"nc": "0000000g"},
    "nc of 0": {"nc": "00000000"},
    "no cnonce": {"cnonce": '""'},
    "no qop (RFC 2069)": {"qop": ""},
    "a qop not offered": {"qop": "auth-int"},
    "a list of qops": {"qop": '"auth, auth-int"'},
    "another realm": {"realm": '"me@kennethreitz.com"'},
    "another algorithm": {"algorithm": "SHA-256"},
    "no algorithm for SHA-256": None,
    "a short response": {"response": '"abc"'},
    "a response not hex": {"response": '"' + "z" * 32 + '"'},
    "not UTF-8": {"username": '"\xe9"'},
}


@pytest.mark.parametrize("change", MALFORMED.values(), ids=MALFORMED.keys())
def test_credentials_that_cannot_answer_the_challenge_are_challenged(anon, change):
    path = PATH + "/MD5" if change is not None else PATH + "/SHA-256"
    asked = challenge(anon, path)
    if isinstance(change, str):
        headers = {"Authorization": change}
    elif change is None:  # without algorithm, the client says MD5 (section 3.4)
        sent = credentials(asked, path)["Authorization"]
        headers = {"Authorization": sent.replace(", algorithm=SHA-256", "")}
    else:
        headers = credentials(asked, path, written=change)
        if change.get("username"):  # a latin-1 byte alone: no UTF-8
            headers["Authorization"] = headers["Authorization"].replace("Ã©", "\xe9")
    answer = anon.get(path, headers=headers, status=401)
    assert_error(answer, 401, "UNAUTHENTICATED")
    assert not stale(answer)
    fake_cookie(answer)


def test_what_is_wrong_with_the_credentials_is_said(anon):
    asked = challenge(anon)
    said = {
        "nc": ({"nc": "1"}, "nc must be 8 hexadecimal digits, from 00000001."),
        "qop": ({"qop": "auth-int"}, "qop must be auth."),
        "algorithm": ({"algorithm": "SHA-256"}, "algorithm must be MD5."),
        "missing": (
            {"cnonce": '""', "nc": ""},
            "The Digest credentials lack nc, cnonce.",
        ),
    }
    for change, message in said.values():
        answer = anon.get(
            PATH, headers=credentials(asked, PATH, written=change), status=401
        )
        assert answer.json["message"] == message


def test_the_algorithm_is_read_in_any_case_quoted_or_not(anon):
    # requests sends algorithm="MD5", quoted, as its challenge wrote it.
    path = PATH + "/SHA-512-256-sess"
    asked = challenge(anon, path)
    written = {"algorithm": '"sha-512-256-SESS"', "qop": '"auth"'}
    sent = credentials(asked, path, written=written)
    assert anon.get(path, headers=sent).status_int == 200


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/lab/digest-auth/auth-conf/ada/s3cret", "qop"),
        ("/lab/digest-auth/AUTH/ada/s3cret", "qop"),
        ("/lab/digest-auth/auth-int,auth/ada/s3cret", "qop"),
        ("/lab/digest-auth/auth/ada/s3cret/sha-256", "algorithm"),
        ("/lab/digest-auth/auth/ada/s3cret/SHA-1", "algorithm"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5-SESS", "algorithm"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/0", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/101", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/-1", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/1.5", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/3.0", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/002", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/+2", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/Never", "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/" + "9" * 5000, "stale_after"),
        ("/lab/digest-auth/auth/ada/s3cret/MD5/%C2%B2", "stale_after"),
    ],
)
def test_a_path_parameter_out_of_its_bounds_is_400_before_any_challenge(
    anon, path, field
):
    answer = anon.get(path, status=400)
    assert_error(answer, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in answer.json["details"]["errors"]] == [field]
    assert "WWW-Authenticate" not in answer.headers


def test_the_document_says_what_the_lab_s_challenges_answer(anon):
    document = anon.get("/lab/openapi.json").json
    paths = operations_inline(document)["paths"]
    headers = document["components"]["headers"]
    for path in (
        "/lab/digest-auth/{qop}/{user}/{passwd}",
        "/lab/basic-auth/{user}/{passwd}",
    ):
        refused = paths[path]["get"]["responses"]["401"]
        example = refused["content"]["application/json"]["examples"]
        message = example["UNAUTHENTICATED"]["value"]["message"]
        assert message == "Send the credentials the lab's challenge asks for."
        challenge = refused["headers"]["WWW-Authenticate"]["$ref"].split("/")[-1]
        assert (
            '`Digest realm="refapi lab", ...` (RFC 7616)'
            in (headers[challenge]["description"])
        )
    answered = paths["/lab/digest-auth/{qop}/{user}/{passwd}"]["get"]["responses"]
    cookie = answered["200"]["headers"]["Set-Cookie"]["$ref"].split("/")[-1]
    assert "in the lab, httpbin's cookies" in headers[cookie]["description"]
