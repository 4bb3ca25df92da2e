"""The app is meant to run with no network: no page asks the browser to fetch anything from another host.

Streamlit fetches a Material icon used as the page icon (the browser tab's favicon) from
fonts.gstatic.com; offline the tab then had no icon. Every request of a visit to every page is recorded
here, and each must go to the app's own address (or be data the page carries itself).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.support.browser import open_page, send, wait_for_identity_cookie

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ["Voice", "Memories", "Sessions", "Knowledge", "LiveKit", "Chat"]


def test_no_page_fetches_anything_from_another_host(streamlit_server, new_browser_page):
    page = new_browser_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(streamlit_server)
    wait_for_identity_cookie(page)
    send(page, "my favorite color is teal")
    for title in PAGES:
        open_page(page, title)
        page.wait_for_timeout(1000)
    app_host = urlsplit(streamlit_server).netloc
    outside = sorted(
        {url for url in requested if urlsplit(url).scheme in ("http", "https", "ws", "wss")}
        - {url for url in requested if urlsplit(url).netloc == app_host}
    )
    assert len(requested) > 20  # the visit itself was recorded
    assert outside == []
    favicon = page.eval_on_selector("link[rel='shortcut icon']", "link => link.href")
    assert favicon.startswith("data:image/svg+xml") or urlsplit(favicon).netloc == app_host
