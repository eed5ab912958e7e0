"""A tiny, safe Markdown renderer for ``session_context.md``.

Only what the export writes is understood: headings, list items, ``> `` quotes, code
spans and a whole-line ``_emphasis_``. Every line is HTML-escaped first and markup is
added around the escaped text, so stored memory text (quoted in the file) can never
become markup; links and raw HTML are shown as text.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> Markup:
    escaped = str(escape(text))
    return Markup(_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escaped))


def render(md: str) -> Markup:
    out: list[str] = []
    quote: list[str] = []
    in_list = False

    def flush_quote() -> None:
        if quote:
            out.append(f"<blockquote>{'<br>'.join(quote)}</blockquote>")
            quote.clear()

    for raw in md.splitlines():
        line = raw.rstrip()
        if line.startswith(">"):
            quote.append(str(escape(line[1:].removeprefix(" "))))
            continue
        flush_quote()
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(line[2:])}")
            continue
        if in_list and not line.strip():
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if m := re.match(r"(#{1,4}) (.*)", line):
            level = len(m.group(1)) + 1  # the page has its own h1
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif len(line) > 2 and line.startswith("_") and line.endswith("_"):
            out.append(f"<p><em>{escape(line[1:-1])}</em></p>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush_quote()
    if in_list:
        out.append("</ul>")
    return Markup("\n".join(out))
