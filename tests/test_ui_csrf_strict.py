"""The browser's CSRF guard, strict (issue 47): the Origin's scheme, form content types
only, exactly one token; against a real ``kioku serve --http``."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from .http_server import http_gateway
from .ui_support import TOKEN, mcp


def test_changes_need_the_same_scheme_a_form_and_one_token(tmp_path: Path) -> None:
    """Before: an https:// Origin for the http:// door, a text/plain body and a second
    csrf field (the last one counted) were all accepted."""
    with http_gateway(tmp_path / "data", KIOKU_HTTP__TOKEN=TOKEN) as url:
        base = url.removesuffix("/mcp")
        nid = str(mcp(url, "add_note", text="The cache lives in /var/cache/x.")["id"])
        with httpx.Client(base_url=base, timeout=60) as c:
            r = c.post("/ui/login", data={"token": TOKEN}, headers={"Origin": base})
            assert r.status_code == 303, r.text
            page = c.get(f"/ui/notes/{nid}").text
            match = re.search(r'name="csrf" value="([^"]+)"', page)
            assert match
            token = match.group(1)
            good = f"csrf={token}&priority=high"
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            refused = [
                ({"Origin": base.replace("http://", "https://"), **form}, good),
                ({"Origin": base, "Content-Type": "text/plain"}, good),
                ({"Origin": base, **form}, f"csrf=forged&{good}"),
                ({"Origin": base, **form}, f"{good}&csrf={token}"),
            ]
            for headers, body in refused:
                r = c.post(f"/ui/notes/{nid}", content=body.encode(), headers=headers)
                assert r.status_code in (403, 415), (headers, body, r.status_code)
            assert mcp(url, "get_note", id=nid)["priority"] == ""
            r = c.post(f"/ui/notes/{nid}", content=good.encode(), headers={"Origin": base, **form})
            assert r.status_code == 303, r.text
        assert mcp(url, "get_note", id=nid)["priority"] == "high"
