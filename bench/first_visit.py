"""The first visit after the server starts: server start → the first visitor's first reply.

Each round starts the app as `make run` does (`streamlit run streamlit_app.py`, a subprocess) on an
embedded database that is stopped (its own DATA_DIR, migrated and seeded by the command line), and a
new visitor in headless Chromium types "my favorite color is vermilion" the moment the chat input
appears. Cold: the visitor opens the page as soon as the server answers its health check, while the
warm-up (agent/warmup.py) still loads the database and the models. Warm: the visitor comes once
``GET /api/warmup`` says the warm-up is done. Times are taken in the benchmark's process around
Playwright's waits for the page's elements.
"""

from __future__ import annotations

import json
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from tests.support.app import prepare_stopped_database, start_streamlit, stop_streamlit, wait_until_stopped
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, answered_turns

MESSAGE = "my favorite color is vermilion"
CHAT_INPUT = '[data-testid="stChatInputTextArea"]'
TIMEOUT_MS = 180_000


@dataclass
class Visit:
    kind: str  # "cold": the visitor comes at once; "warm": after the warm-up is done
    healthy_s: float  # server start → its health check answers (polled every 0.5 s)
    warmed_s: float | None  # server start → the warm-up is done, as /api/warmup reports it
    opened_s: float  # server start → the visitor opens the page
    interactive_s: float  # server start → the chat input is shown
    bubble_ms: float | None  # Enter → the visitor's message is shown as their bubble
    reply_ms: float | None  # Enter → the agent's answer is shown
    total_s: float | None  # server start → the agent's answer is shown
    error: str | None = None  # what did not show within TIMEOUT_MS (the visit counts as failed)


def _warmup_status(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/warmup", timeout=10) as response:
        return json.load(response)


def _visit(browser, data_dir: Path, kind: str, log_path: Path) -> Visit:
    started = time.monotonic()
    process, url = start_streamlit({"DATA_DIR": str(data_dir)}, log_path=log_path, timeout=180)
    healthy = time.monotonic()
    try:
        if kind == "warm":
            while not _warmup_status(url)["done"]:
                time.sleep(0.2)
        status = _warmup_status(url)
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        try:
            page = context.new_page()
            opened = time.monotonic()
            page.goto(url)
            box = page.locator(CHAT_INPUT)
            box.wait_for(state="visible", timeout=TIMEOUT_MS)
            interactive = time.monotonic()
            box.fill(MESSAGE)
            box.press("Enter")
            sent = time.monotonic()
            bubble = replied = error = None
            try:
                page.locator('[data-testid="stChatMessage"]', has_text=MESSAGE).first.wait_for(timeout=TIMEOUT_MS)
                bubble = time.monotonic()
                answered_turns(page).filter(has_text="vermilion").first.wait_for(timeout=TIMEOUT_MS)
                replied = time.monotonic()
            except PlaywrightTimeout:
                error = "no answer" if bubble else "the message was not shown"
                error += f" within {TIMEOUT_MS // 1000} s"
        finally:
            context.close()
        if not status["done"]:
            status = _warmup_status(url)
    finally:
        stop_streamlit(process)
    wait_until_stopped(data_dir / "pg", timeout=60)
    return Visit(
        kind=kind,
        healthy_s=healthy - started,
        warmed_s=status["seconds"],
        opened_s=opened - started,
        interactive_s=interactive - started,
        bubble_ms=None if bubble is None else (bubble - sent) * 1000,
        reply_ms=None if replied is None else (replied - sent) * 1000,
        total_s=None if replied is None else replied - started,
        error=error,
    )


def run(rounds: int = 3) -> dict:
    visits: list[Visit] = []
    with tempfile.TemporaryDirectory(prefix="mp-bench-first-visit-") as tmp:
        data_dir = prepare_stopped_database(Path(tmp) / "data")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                for kind in ("cold", "warm"):
                    for number in range(rounds):
                        visits.append(_visit(browser, data_dir, kind, Path(tmp) / f"{kind}-{number}.log"))
                        print(f"first visit, {kind} {number + 1}/{rounds}: {visits[-1]}", flush=True)
            finally:
                browser.close()
    return {"rounds": rounds, "visits": visits}
