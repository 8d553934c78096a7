"""Browser tool speed: one `interact` of 10 sub-actions on a local page, against its target.

Target (issue 30): an interact of 10 sub-actions on a local page in under 3 s on
this machine. The page is a form served on 127.0.0.1 by this script; each run
is one `BrowserSession.interact` of: goto the form, fill three fields, select an
option, press a key, click a button, wait for its result, click submit, wait for
the answer page (10 sub-actions, the goto and the submit each a real HTTP
request). The session is started (Chromium launched, the form loaded once)
before the timed runs, as it is in a chat session after its first browser call;
`--cold` also times the first call of a fresh session (Chromium's start).

Usage: `python bench/bench_browser.py [--runs N] [--cold]`. Prints each run's
seconds, the median and the target.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from nightschool.browser import Action, BrowserConfig, BrowserSession

TARGET_S = 3.0
"""Issue 30's bound on one 10-sub-action interact, seconds."""

FORM = b"""<!doctype html><html><body><h1>Order</h1>
<form method="post" action="/done">
<input id="first" name="first"><input id="last" name="last"><input id="email" name="email">
<select id="size" name="size"><option>S</option><option>M</option><option>L</option></select>
<input id="note" name="note"
  onkeydown="if (event.key === 'Enter') { event.preventDefault(); this.value += '.'; }">
<button id="check" type="button"
  onclick="document.getElementById('ok').textContent = 'checked'">Check</button>
<p id="ok"></p><button id="send" type="submit">Send</button></form></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _page(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._page(FORM)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._page(b'<p id="thanks">thanks</p>')


def sequence(url: str) -> list[Action]:
    return [
        Action("goto", url),
        Action("fill", "#first", "Ada"),
        Action("fill", "#last", "Lovelace"),
        Action("fill", "#email", "ada@example.org"),
        Action("select", "#size", "M"),
        Action("press", "#note", "Enter"),
        Action("click", "#check"),
        Action("wait_for", "#ok:has-text('checked')"),
        Action("click", "#send"),
        Action("wait_for", "#thanks"),
    ]


def timed(session: BrowserSession, actions: list[Action]) -> float:
    started = time.perf_counter()
    result = session.interact(actions, stop_on_error=True)
    took = time.perf_counter() - started
    if result.error is not None or len(result.steps) != len(actions):
        raise SystemExit(f"the sequence failed:\n{result.text}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs (default 7)")
    parser.add_argument("--cold", action="store_true", help="also time a fresh session's first")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/form"
    actions = sequence(url)
    config = BrowserConfig()
    try:
        if args.cold:
            fresh = BrowserSession(config, name="bench-cold")
            try:
                print(f"cold (Chromium start + the sequence): {timed(fresh, actions):.3f} s")
            finally:
                fresh.close()
        session = BrowserSession(config, name="bench")
        try:
            session.goto(url)  # warm: Chromium started, the form loaded once
            runs = [timed(session, actions) for _ in range(args.runs)]
        finally:
            session.close()
    finally:
        server.shutdown()
    for index, seconds in enumerate(runs, start=1):
        print(f"run {index}: {seconds:.3f} s")
    median = statistics.median(runs)
    verdict = "within" if median < TARGET_S else "OVER"
    print(
        f"interact of {len(actions)} sub-actions: median {median:.3f} s over {len(runs)} runs "
        f"(min {min(runs):.3f}, max {max(runs):.3f}); target < {TARGET_S:.1f} s: {verdict}"
    )


if __name__ == "__main__":
    main()
