"""The lab's fixed documents: what ``/lab/html``, ``/lab/encoding/utf8``,
``/lab/json``, ``/lab/xml`` and ``/lab/deny`` answer, the same bytes every time.

They are refapi's own text in httpbin's shapes (docs/lab.md, "Bodies"): a page of
prose, a page of UTF-8 in many scripts, and a slide show as JSON and as XML, whose
members (``slideshow`` with ``author``, ``date``, ``slides`` and ``title``) are
what a client's tests written against httpbin read. Nothing in them comes from
the request, so none needs escaping.
"""

from __future__ import annotations

from typing import Any

HTML_PAGE = b"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>A page of the lab</title>
  </head>
  <body>
    <h1>Request and response</h1>
    <p>A client opens a connection, writes a request line, some header fields and
    perhaps a body, and waits. The server reads them, does what the method asks of
    the resource the path names, and writes back a status, its own header fields
    and perhaps a body. Everything else in HTTP is about doing that again, sooner,
    with fewer bytes, or without doing it at all: caches keep answers, validators
    ask whether a kept answer is still good, ranges fetch the part that is missing,
    and content codings squeeze the bytes that do have to travel.</p>
    <p>This page is the same every time you ask for it, so the lab gives it a
    strong entity tag: send it back in If-None-Match and the answer is 304, with
    no body at all.</p>
  </body>
</html>
"""

UTF8_PAGE = """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>UTF-8, shown</title>
  </head>
  <body>
    <h1>UTF-8, shown</h1>
    <p>Each character below is sent as one to four bytes of UTF-8 (RFC 3629), as
    the Content-Type's charset says.</p>
    <pre>
Good morning, in a few of the world's scripts:

  Greek       Καλημέρα
  Cyrillic    Доброе утро
  Armenian    Բարի լույս
  Georgian    დილა მშვიდობისა
  Hebrew      בוקר טוב
  Arabic      صباح الخير
  Devanagari  सुप्रभात
  Bengali     সুপ্রভাত
  Thai        อรุณสวัสดิ์
  Hangul      좋은 아침
  Japanese    おはようございます
  Chinese     早上好

Mathematics:  ∀x ∈ ℝ: x² ≥ 0,  ∑ 1/n² = π²/6,  ∫₀¹ x dx = ½
Arrows:       ← ↑ → ↓ ↔ ⇒ ⇔
Boxes:        ┌──┬──┐ ├──┼──┤ └──┴──┘
Currency:     € £ ¥ ₹ ₩ ₿
Four bytes:   😀 🚀 🌍 𝄞 𝔘𝔗𝔉
    </pre>
  </body>
</html>
""".encode()

# The slide show, as /lab/json answers it (schemas/lab-slideshow.json).
SLIDESHOW: dict[str, Any] = {
    "slideshow": {
        "author": "The refapi lab",
        "date": "2026-11-29",
        "slides": [
            {"title": "What a request says", "type": "all"},
            {
                "items": [
                    "The <em>method</em>: what to do",
                    "The <em>target</em>: to which resource",
                ],
                "title": "In two lines",
                "type": "all",
            },
        ],
        "title": "A Slide Show of the Lab",
    }
}

# The same slide show, as /lab/xml answers it.
XML_DOCUMENT = b"""<?xml version="1.0" encoding="utf-8"?>
<!-- The lab's slide show: the same as /lab/json's -->
<slideshow title="A Slide Show of the Lab" date="2026-11-29" author="The refapi lab">
  <slide type="all">
    <title>What a request says</title>
  </slide>
  <slide type="all">
    <title>In two lines</title>
    <item>The <em>method</em>: what to do</item>
    <item>The <em>target</em>: to which resource</item>
  </slide>
</slideshow>
"""

DENIED = b"""
   .--------------------------------------.
   |  robots.txt asked you not to come.   |
   |  You came anyway. The lab noticed.   |
   '--------------------------------------'
          \\
           \\   (o_o)
               <)  )>
                /  \\
"""
