"""The status codes this service may send, and the reason phrase of each.

RFC 9110 (section 15) names each code; the phrase is for people only, and a client
must act on the number alone. Python's ``http.HTTPStatus`` knows the same codes but
words some of them as the RFC's predecessors did until Python 3.13 (413 "Request
Entity Too Large", now "Content Too Large"), so the words a client sees would hang
on the Python that serves it. This table is the project's own: the status line of
every answer (``web/wsgi.py``; the lab's is then made httpbin's, upper case, by
``lab/__init__.py``), the OpenAPI document's descriptions and the messages of the
lab's ``/lab/status/{codes}`` (docs/lab.md) read it, so each says the same on every
Python.
``tests/web/test_statuses.py`` holds it to the codes ``HTTPStatus`` knows.
"""

from __future__ import annotations

# RFC 9110's wording; the codes of other RFCs (102, 103, 207, 208, 226, 418, 421,
# 423-425, 428, 429, 431, 451, 506-511) in their own RFCs' words.
PHRASES: dict[int, str] = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing",
    103: "Early Hints",
    200: "OK", 201: "Created", 202: "Accepted",
    203: "Non-Authoritative Information", 204: "No Content", 205: "Reset Content",
    206: "Partial Content", 207: "Multi-Status", 208: "Already Reported",
    226: "IM Used",
    300: "Multiple Choices", 301: "Moved Permanently", 302: "Found",
    303: "See Other", 304: "Not Modified", 305: "Use Proxy",
    307: "Temporary Redirect", 308: "Permanent Redirect",
    400: "Bad Request", 401: "Unauthorized", 402: "Payment Required",
    403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    406: "Not Acceptable", 407: "Proxy Authentication Required",
    408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
    412: "Precondition Failed", 413: "Content Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 416: "Range Not Satisfiable",
    417: "Expectation Failed", 418: "I'm a Teapot", 421: "Misdirected Request",
    422: "Unprocessable Content", 423: "Locked", 424: "Failed Dependency",
    425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required",
    429: "Too Many Requests", 431: "Request Header Fields Too Large",
    451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported", 506: "Variant Also Negotiates",
    507: "Insufficient Storage", 508: "Loop Detected", 510: "Not Extended",
    511: "Network Authentication Required",
}  # fmt: skip

# What a WSGI server is handed as the status: the code and its phrase.
STATUS_LINES = {code: f"{code} {phrase}" for code, phrase in PHRASES.items()}
# Each of those lines' code, for a layer that reads an answer's status: a lookup,
# not int() of the line's first three characters.
# PERF: 1,600 instructions a request, make bench-instructions
STATUS_CODES = {line: code for code, line in STATUS_LINES.items()}
