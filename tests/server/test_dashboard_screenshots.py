"""The trajectory page shows the browser's screenshots (`extra["screenshots"]`).

A trajectory holding two screenshots as the chat agent stores them
(`browser.screenshot_record`) and one entry that is not a PNG: the page shows
the two (images served by their own route, under the dashboard's unchanged
CSP), the route serves exactly the stored bytes as `image/png`, and the
`extra` dump no longer carries the base64 images.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from nightschool.browser import Screenshot, screenshot_record
from nightschool.server.dashboard import standalone_app
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory

LOCAL = "http://127.0.0.1"


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real one-colour PNG (zlib, no third-party imaging library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


FIRST = png(40, 30, (200, 30, 30))
SECOND = png(20, 10, (30, 30, 200))


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    store = Store.open(tmp_path / "nightschool.db")
    shots = [
        screenshot_record(Screenshot(FIRST, "http://127.0.0.1:8123/form", 40, 30), 1),
        screenshot_record(Screenshot(SECOND, "http://127.0.0.1:8123/done", 20, 10), 2),
        {"number": 3, "url": "http://127.0.0.1:8123/x", "png_base64": "PHN2Zz4="},  # <svg>
    ]
    trajectory = store.append_trajectory(
        Trajectory(
            task_kind="chat",
            user_request="fill the form on the page",
            outcome=Outcome.PASSED,
            extra={"screenshots": shots, "browser": True},
        )
    )
    app = standalone_app(store, memory=None, api_key=None)
    try:
        yield TestClient(app, base_url=LOCAL, follow_redirects=False), trajectory.id
    finally:
        store.close()


def test_the_trajectory_page_shows_each_screenshot(stored: tuple[TestClient, str]) -> None:
    client, tid = stored
    page = client.get(f"/dashboard/trajectories/{tid}")
    assert page.status_code == 200
    text = page.text
    assert "Screenshots <small>2</small>" in text
    for number, url in ((1, "/form"), (2, "/done")):
        assert f'src="/dashboard/trajectories/{tid}/screenshots/{number}.png"' in text
        assert f"<code>http://127.0.0.1:8123{url}</code>" in text
    assert "40×30" in text and "20×10" in text
    assert "screenshots/3.png" not in text, "an entry that is not a PNG is not shown"
    assert "img-src 'self'" in page.headers["content-security-policy"]
    assert screenshot_record(Screenshot(FIRST, "u", 40, 30), 1)["png_base64"] not in text
    assert "base64 characters&gt;" in text, "the extra dump names the image instead"


def test_the_screenshot_route_serves_the_stored_png(stored: tuple[TestClient, str]) -> None:
    client, tid = stored
    for number, data in ((1, FIRST), (2, SECOND)):
        got = client.get(f"/dashboard/trajectories/{tid}/screenshots/{number}.png")
        assert got.status_code == 200
        assert got.headers["content-type"] == "image/png"
        assert got.headers["x-content-type-options"] == "nosniff"
        assert got.content == data
    for missing in (
        f"{tid}/screenshots/3.png",
        f"{tid}/screenshots/9.png",
        "nope/screenshots/1.png",
    ):
        assert client.get(f"/dashboard/trajectories/{missing}").status_code == 404


def test_a_trajectory_without_screenshots_has_no_section(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "nightschool.db")
    try:
        plain = store.append_trajectory(Trajectory(task_kind="chat", user_request="hi"))
        client = TestClient(standalone_app(store, memory=None, api_key=None), base_url=LOCAL)
        text = client.get(f"/dashboard/trajectories/{plain.id}").text
        assert "Trajectory" in text and "Screenshots" not in text
    finally:
        store.close()
