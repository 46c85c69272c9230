"""httpbin's request endpoints: the request, reflected in httpbin's members.

``/lab/get``, ``/lab/post``, ``/lab/put``, ``/lab/patch`` and ``/lab/delete`` each
take their one method (``HEAD`` with ``GET``) and answer ``200`` with what the
service was handed, in the members httpbin names them by, so that a client's tests
written against httpbin pass with another base URL (docs/lab.md, "Requests"):

- ``args``: the query, each name to its value (to a list of them, when repeated);
- ``data``: the body as text, unless it is a form (then ``""``); a body that is not
  UTF-8 as a ``data:`` URL of its bytes in base64, as httpbin writes it;
- ``files`` and ``form``: a form's files (their content, as ``data`` is written)
  and fields, from ``application/x-www-form-urlencoded`` or ``multipart/form-data``;
- ``json``: the body parsed as JSON, whatever its ``Content-Type``; ``null`` when it
  does not parse (or nests deeper than ``REFAPI_JSON_MAX_DEPTH``);
- ``headers``: each header field as the server canonicalised its name;
- ``origin``: the client address, after ``REFAPI_TRUST_PROXY``;
- ``url``: the URL asked for, as the request names it;
- and the lab's own ``credentials``: the kinds presented, none checked.

``/lab/anything`` (and ``/lab/anything/{path}``, any path below it), the echo,
takes every method of ``handlers.METHODS`` and answers them all, with ``method``
and ``notes`` (what to change in the request: ``request_notes.py``) besides.
``/lab/get`` answers ``args``, ``headers``, ``origin``, ``url`` and
``credentials``, as httpbin's does. A header that is or may carry a credential
is ``[redacted]`` (``handlers.redacted_headers``). ``/lab/headers``, ``/lab/ip``,
``/lab/user-agent`` and ``/lab/uuid`` answer one member each. Every answer is
``no-store``: it depends on the headers sent, credentials among them.
"""

from __future__ import annotations

import base64
import io
import uuid
from typing import TYPE_CHECKING, Any

from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser
from werkzeug.http import parse_options_header
from werkzeug.sansio.utils import get_current_url

from ..errors import ApiError, ValidationError
from ..web import Request, Response, json_response
from ..web.body import parse_form, parse_json, read_bytes
from ..web.negotiation import JSON
from ..web.origin import request_host
from . import handlers
from .request_notes import request_notes

if TYPE_CHECKING:
    from ..config import Config

FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
# A form's fields (a multipart body's parts) at most: each is parsed, so a body of
# many tiny ones costs what its count costs, not what its size does.
MAX_FORM_PARTS = 1000
# A request's members in httpbin's order, the lab's own last.
REQUEST_MEMBERS = ("args", "data", "files", "form", "headers", "json", "origin", "url",
                   "credentials")  # fmt: skip
ANYTHING_MEMBERS = ("args", "data", "files", "form", "headers", "json", "method",
                    "origin", "url", "credentials", "notes")  # fmt: skip


def reflect_request(request: Request, config: Config) -> Response:
    """``/lab/post``, ``put``, ``patch``, ``delete``: httpbin's members."""
    return _reflected(request, config, REQUEST_MEMBERS)


def reflect_anything(request: Request, config: Config) -> Response:
    """``/lab/anything``, any of ``METHODS``: httpbin's members and the method."""
    return _reflected(request, config, ANYTHING_MEMBERS)


def reflect_anything_at(request: Request, config: Config, path: str) -> Response:
    """``/lab/anything/{path}``: as ``/lab/anything``; the path is in ``url``."""
    return reflect_anything(request, config)


def reflect_get(request: Request) -> Response:
    """``/lab/get``: the query, the headers, the client and the URL."""
    return json_response(get_members(request))


def reflect_headers(request: Request) -> Response:
    return json_response({"headers": handlers.redacted_headers(request)})


def reflect_ip(request: Request) -> Response:
    return json_response({"origin": request.environ.get("REMOTE_ADDR")})


def reflect_user_agent(request: Request) -> Response:
    return json_response({"user-agent": request.environ.get("HTTP_USER_AGENT")})


def reflect_uuid(request: Request) -> Response:
    """A UUID of version 4 (RFC 9562 section 5.4), new each time."""
    return json_response({"uuid": str(uuid.uuid4())})


def _reflected(request: Request, config: Config, names: tuple[str, ...]) -> Response:
    """The request's ``names``, body members included, in that order; the echo's
    ``notes`` on the request besides (``request_notes.py``)."""
    environ = request.environ
    raw = read_bytes(environ, config.max_body_bytes)
    members = get_members(request) | _body_members(raw, environ, config)
    members["method"] = environ["REQUEST_METHOD"]
    if "notes" in names:
        members["notes"] = request_notes(
            # What the echo answers in, whatever Accept says.
            environ,
            raw,
            answers=JSON,
            max_depth=config.json_max_depth,
        )
    return json_response({name: members[name] for name in names})


def get_members(request: Request) -> dict[str, Any]:
    """``/lab/get``'s members, which the lab's other reflections of a GET share
    (its bodies' and its caches': docs/lab.md, "Bodies", "Caching")."""
    environ = request.environ
    return {
        "args": _as_httpbin(request.args),
        "headers": handlers.redacted_headers(request),
        "origin": environ.get("REMOTE_ADDR"),
        "url": _url(environ),
        "credentials": handlers.credentials(environ),
    }


def _url(environ: dict[str, Any]) -> str:
    """The URL asked for, as httpbin's (Flask's ``request.url``) writes it: an IRI,
    the path's UTF-8 decoded. Werkzeug's ``wsgi.get_current_url`` would quote the
    path's WSGI text, whose characters are bytes, each as a character of its own."""
    return get_current_url(
        environ["wsgi.url_scheme"],
        request_host(environ),
        _text(environ.get("SCRIPT_NAME", "")),
        _text(environ.get("PATH_INFO", "")),
        environ.get("QUERY_STRING", "").encode("latin-1"),
    )


def _text(wsgi_text: str) -> str:
    """A WSGI string (PEP 3333: bytes as latin-1) as the UTF-8 text it carries."""
    return wsgi_text.encode("latin-1").decode("utf-8", "replace")


def _body_members(
    raw: bytes, environ: dict[str, Any], config: Config
) -> dict[str, Any]:
    """``data``, ``files``, ``form`` and ``json``, from ``raw``, a body read to at
    most ``REFAPI_MAX_BODY_BYTES`` (413 beyond)."""
    media_type, options = parse_options_header(environ.get("CONTENT_TYPE"))
    form: dict[str, Any] = {}
    files: dict[str, Any] = {}
    data = ""
    parsed_form = None
    if media_type.lower() in FORMS and raw:
        parsed_form = _parse_form(raw, media_type.lower(), options)
    if parsed_form is not None:
        fields, uploaded = parsed_form
        form = _as_httpbin(fields)
        files = {
            name: _as_text(upload.read()) for name, upload in uploaded.items(multi=True)
        }
    else:  # no form, or a multipart body that is none: shown as it came
        data = _as_text(raw)
    try:
        parsed = parse_json(raw, config.json_max_depth) if raw else None
    except ApiError:  # not JSON, as httpbin says: null
        parsed = None
    return {"data": data, "files": files, "form": form, "json": parsed}


def _parse_form(
    raw: bytes, media_type: str, options: dict[str, str]
) -> tuple[MultiDict[str, str], MultiDict[str, Any]] | None:
    """A form body's fields and files (bounded: the body is at most the body limit,
    its fields or parts ``MAX_FORM_PARTS``, 400 beyond); None for a multipart body
    that cannot be read as one, which is shown as data."""
    message = f"is not a form of at most {MAX_FORM_PARTS} fields"
    if media_type == FORMS[0]:
        try:
            return parse_form(raw, MAX_FORM_PARTS), MultiDict()
        except ValueError:
            raise ValidationError.one("body", message) from None
    parser = FormDataParser(
        # In memory, as the body already is (at most the body limit): not
        # Werkzeug's temporary files, which would want closing.
        stream_factory=_in_memory,
        max_form_memory_size=len(raw),
        max_form_parts=MAX_FORM_PARTS,
        silent=False,
    )
    try:
        parsed = parser.parse(io.BytesIO(raw), media_type, len(raw), options)
    except RequestEntityTooLarge:  # too many parts
        raise ValidationError.one("body", message) from None
    except ValueError:  # not multipart after all
        return None
    _, fields, uploaded = parsed
    return fields, uploaded


def _in_memory(*_: object, **__: object) -> io.BytesIO:
    return io.BytesIO()


def _as_text(raw: bytes) -> str:
    """``raw`` as UTF-8 text, or as httpbin writes bytes that are not: a ``data:``
    URL of them in base64."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        encoded = base64.b64encode(raw).decode("ascii")
        return f"data:application/octet-stream;base64,{encoded}"


def _as_httpbin(values: MultiDict[str, str]) -> dict[str, str | list[str]]:
    """Each name to its value, or to the list of its values when repeated."""
    return {
        name: found[0] if len(found) == 1 else found for name, found in values.lists()
    }
