"""A headless browser the agent can drive, on pages served on loopback only.

Playwright (sync API) drives the system Chromium (Debian's `chromium`, which
scripts/install.sh installs; `BrowserConfig.executable` picks another), headless,
one browser context per session (`BrowserSession`; `BrowserSessions` keeps one
per chat session). Four operations: `goto(url)`, `interact(actions,
stop_on_error)` with the sub-actions goto, click, fill, select, press and
wait_for, `read(selector=None)` and `screenshot()`; `BrowserSession.call` takes
the tool's JSON arguments (`BROWSER_USAGE`). Every operation is time-limited,
read text is capped, and a sequence that stops early carries
`aborted_sequence` and `SEQUENCE_ABORTED_BANNER` (seed 002: a failed goto always
stops it; another failed sub-action when `stop_on_error`).

Isolation (`_loopback`): only `127.0.0.1`, `::1` and `localhost` are reachable;
`goto` refuses any other URL before navigating, a route handler aborts every
other request the page makes (subresources, fetch/XHR, navigations, WebSockets),
and Chromium runs behind a proxy that refuses every connection, with only the
loopback names bypassing it.

`probe_browser` is a self-test (`nightschool doctor`): Chromium starts, opens a
page served on loopback and reads it back. Importing this package does not
import Playwright.
"""

from nightschool.browser._actions import (
    BROWSER_TOOL_SCHEMA,
    BROWSER_USAGE,
    OPS,
    BrowserCall,
    Op,
    read_call,
    selectors_in,
)
from nightschool.browser._engine import DEFAULT_CHROMIUM, check_playwright, find_chromium
from nightschool.browser._loopback import LOOPBACK_HOSTS, chromium_network_args, loopback_problem
from nightschool.browser._probe import ProbeResult, probe_browser
from nightschool.browser._render import screenshot_record
from nightschool.browser._session import MAX_READ_MATCHES, BrowserSession, BrowserSessions
from nightschool.browser._types import (
    ACTION_KINDS,
    BROWSER_TOOL_NAME,
    SEQUENCE_ABORTED_BANNER,
    WAIT_STATES,
    Action,
    ActionKind,
    BrowserConfig,
    BrowserResult,
    BrowserUnavailableError,
    Screenshot,
    StepResult,
)

__all__ = [
    "ACTION_KINDS",
    "BROWSER_TOOL_NAME",
    "BROWSER_TOOL_SCHEMA",
    "BROWSER_USAGE",
    "DEFAULT_CHROMIUM",
    "LOOPBACK_HOSTS",
    "MAX_READ_MATCHES",
    "OPS",
    "SEQUENCE_ABORTED_BANNER",
    "WAIT_STATES",
    "Action",
    "ActionKind",
    "BrowserCall",
    "BrowserConfig",
    "BrowserResult",
    "BrowserSession",
    "BrowserSessions",
    "BrowserUnavailableError",
    "Op",
    "ProbeResult",
    "Screenshot",
    "StepResult",
    "check_playwright",
    "chromium_network_args",
    "find_chromium",
    "loopback_problem",
    "probe_browser",
    "read_call",
    "screenshot_record",
    "selectors_in",
]
