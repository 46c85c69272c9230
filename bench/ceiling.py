"""The transport's ceiling: a WSGI function returning a constant, no storage."""

BODY = b'{"userId":1,"id":1,"title":"review the cursor #1","completed":false}'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def application(environ, start_response):
    if environ["REQUEST_METHOD"] == "POST":
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", list(HEADERS))
    return [BODY]
