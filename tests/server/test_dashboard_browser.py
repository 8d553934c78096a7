"""The dashboard in a real browser: `nightschool dashboard` in a subprocess over a
populated home, headless Chromium (Debian's `chromium`, driven by Playwright)
logs in through the form, loads every page, clicks through a lesson's lineage
to its source trajectory, and saves screenshots that must not be blank.

Skipped only where /usr/bin/chromium is absent (scripts/install.sh installs it).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from bench.data.dashboard_history import History, populate
from PIL import Image

from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.store import Store

NIGHTSCHOOL = Path(sys.executable).parent / "nightschool"
"""The `nightschool` console script of the running environment."""
CHROMIUM = Path("/usr/bin/chromium")
KEY = "browser-test-key-51c0ffee"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (installed by scripts/install.sh)",
)


def assert_not_blank(path: Path) -> None:
    """The screenshot shows a page: varied pixels, and plenty that are not background."""
    pixels = np.asarray(Image.open(path).convert("L"), dtype=np.float64)
    assert pixels.shape[0] >= 300 and pixels.shape[1] >= 1000, (path, pixels.shape)
    background = np.median(pixels)
    drawn = float(np.mean(np.abs(pixels - background) > 24))
    assert pixels.std() > 12.0, (path.name, pixels.std())
    assert drawn > 0.02, (path.name, drawn)


@pytest.fixture
def dashboard_url(tmp_path: Path) -> Iterator[tuple[str, History]]:
    """Populate a home, start `nightschool dashboard --port 0` on it, yield (root URL, history)."""
    home = Path(os.environ["NIGHTSCHOOL_HOME"])
    store = Store.open(home / "nightschool.db")
    memory = SkillMemory(store, embedder=HashingEmbedder())
    try:
        history = populate(store, memory, trajectories=1500, days=40, evolve_dir=home / "evolve")
    finally:
        memory.close()
        store.close()
    env = {**os.environ, "NIGHTSCHOOL_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(NIGHTSCHOOL), "dashboard", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            output.append(line)
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                found = re.search(r"on (http://\S+)/dashboard/", lines.get(timeout=1.0))
            except queue.Empty:
                continue
            url = found.group(1) if found else None
        assert url is not None, "nightschool dashboard did not start:\n" + "".join(output)
        yield url, history
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_every_page_in_headless_chromium(
    dashboard_url: tuple[str, History], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    url, history = dashboard_url
    shots = tmp_path / "shots"
    shots.mkdir()
    lesson = history.lesson_ids[0]
    source = history.source_of[lesson]
    requested: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.on(
                "console",
                lambda message: problems.append(message.text) if message.type == "error" else None,
            )
            page.on("pageerror", lambda error: problems.append(str(error)))

            page.goto(f"{url}/dashboard/lessons")
            assert page.url.startswith(f"{url}/dashboard/login"), page.url
            page.screenshot(path=shots / "login.png")
            page.fill("#key", "not-the-key")
            page.click("button[type=submit]")
            assert "wrong key" in page.content()
            problems.clear()  # the browser logs the 401 of the wrong key as an error
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_url(f"{url}/dashboard/lessons")
            cookies = page.context.cookies()
            session = next(c for c in cookies if c["name"] == "nightschool_dashboard")
            assert session["httpOnly"] and session["sameSite"] == "Strict"
            assert KEY not in session["value"]

            # click through the lineage: lessons list -> lesson -> its source trajectory
            page.click(f'a[href="/dashboard/lessons/{lesson}"] >> nth=0')
            page.wait_for_url(f"{url}/dashboard/lessons/{lesson}")
            assert page.is_visible("text=1 · Source trajectory")
            assert page.is_visible("text=4 · Exposures")
            page.screenshot(path=shots / "lineage.png", full_page=True)
            page.click("a.source-link")
            page.wait_for_url(f"{url}/dashboard/trajectories/{source}")
            assert source in page.inner_text("h1")
            assert page.is_visible("text=run_solution >> nth=0")
            page.screenshot(path=shots / "source-trajectory.png", full_page=True)
            page.click(f'a[href="/dashboard/lessons/{lesson}"] >> nth=0')  # "what it taught"
            page.wait_for_url(f"{url}/dashboard/lessons/{lesson}")
            page.click(f'a[href="/dashboard/trajectories/{history.exposed[lesson][0]}"]')
            page.wait_for_url(f"{url}/dashboard/trajectories/{history.exposed[lesson][0]}")

            page.goto(f"{url}/dashboard/strategies")
            run = page.get_attribute('a[href^="/dashboard/strategies/runs/"]', "href")
            assert run is not None
            pages = {
                "overview": "/dashboard/",
                "trajectories": "/dashboard/trajectories",
                "trajectories-failed": "/dashboard/trajectories?outcome=failed&kind=selfplay",
                "lessons": "/dashboard/lessons",
                "skills": "/dashboard/lessons?kind=skill",
                "retracted": "/dashboard/lessons?status=retracted",
                "retract-confirm": f"/dashboard/lessons/{lesson}/retract",
                "evals": "/dashboard/evals",
                "eval-run": f"/dashboard/evals/{history.eval_run_ids[-1]}",
                "strategies": "/dashboard/strategies",
                "evolve-run": run,
                "diary": "/dashboard/diary",
            }
            for name, path in pages.items():
                response = page.goto(url + path)
                assert response is not None and response.status == 200, (name, path)
                page.wait_for_load_state("networkidle")
                broken = page.evaluate(
                    "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
                    ".map(i => i.src)"
                )
                assert broken == [], (name, broken)
                page.screenshot(path=shots / f"{name}.png", full_page=True)
            page.goto(f"{url}/dashboard/trajectories")
            page.click('a[rel="next"]')
            page.wait_for_load_state("networkidle")
            assert "older=" in page.url
        finally:
            browser.close()
    assert problems == []
    assert not any(KEY in requested_url for requested_url in requested)
    saved = sorted(shots.glob("*.png"))
    assert len(saved) == 3 + 12
    for shot in saved:
        assert_not_blank(shot)
