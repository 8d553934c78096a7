"""The `web_automation` cluster's machinery: the site, the browser bridge, its isolation.

The bank-wide checks (every template x tier: reference passes, near-miss
fails; cross-seed at most 20%) run these templates too, in
`test_challenge_eval.py` and `test_bank_variety.py`. Here: the site server on
its own, hand-made web challenges driving the real sandbox and the real
Chromium through the bridge (the Playwright subset a solution may use, a
solution that tries to leave the task's site or read the pages as files), and
where the cluster is left out (no browser; no model-written challenges).
"""

from __future__ import annotations

import base64
import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nightschool import browser
from nightschool.browser import BrowserUnavailableError
from nightschool.challenges import (
    GENERATED_CLUSTERS,
    TIERS,
    WEB_CLUSTER,
    Challenge,
    GenerationRequest,
    evaluate,
    practice_clusters,
    render,
    templates,
    web_problem,
)
from nightschool.challenges._templates._web_kit import site_setup, web_validator
from nightschool.challenges._webrun import _WARM
from nightschool.challenges._website import Login, Site, serving
from nightschool.challenges.generated import ChallengeGenerator
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox, SandboxConfig
from nightschool.solver import Solver

HAS_CHROMIUM = Path("/usr/bin/chromium").exists() or shutil.which("chromium") is not None
needs_browser = pytest.mark.skipif(
    shutil.which("bwrap") is None or not HAS_CHROMIUM,
    reason="needs bubblewrap and Debian's chromium (scripts/install.sh installs both)",
)

PAGE = """<!doctype html><title>Shop</title>
<h1 id="title">Shop</h1>
<form method="post" action="/buy">
  <label for="q">Quantity</label><input id="q" name="qty">
  <input name="note" placeholder="Note for the courier…">
  <label for="c">Colour</label><select id="c" name="colour">
    <option value="r">Red</option><option value="t">Teal</option></select>
  <label><input type="checkbox" name="gift" value="yes"> Gift wrap</label>
  <button type="submit">Buy now</button>
</form>
<ul><li class="row">alpha</li><li class="row">beta</li><li class="row">gamma</li></ul>
<a href="/other">elsewhere</a>"""


def hand_made(site: Site, body: str, data: object = None) -> Challenge:
    return Challenge(
        template="web_automation.hand_made",
        cluster=WEB_CLUSTER,
        tier="basic",
        seed=0,
        prompt="Buy on the page. Write `solution.py`.",
        setup_script=site_setup(site),
        validation_script=web_validator(body, data),
        reference_solution="",
        wrong_solution="",
    )


SHOP = Site(
    pages={"/": PAGE, "/done": "<p id='ok'>Bought</p>", "/other": "<p>other</p>"},
    posts={"/buy": "/done"},
)
RECORD_BODY = """
out = run_web_solution(SOLUTION)
print("STDOUT:" + out.strip().replace("\\n", "|"))
print("RECORD:" + json.dumps(site_record()))
fail("shown")
"""


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(timeout_s=40))


def run(sandbox: Sandbox, source: str, site: Site = SHOP) -> tuple[str, list[dict[str, object]]]:
    """The solution's stdout and the site's record, as the validator saw them."""
    result = evaluate(sandbox, hand_made(site, RECORD_BODY), source)
    lines = result.feedback.splitlines()
    out = next((x[len("STDOUT:") :] for x in lines if x.startswith("STDOUT:")), None)
    record = next((json.loads(x[len("RECORD:") :]) for x in lines if x.startswith("RECORD:")), None)
    assert out is not None and record is not None, result.feedback
    return out, record


# -- the site, without a browser --------------------------------------------------------


def test_the_site_records_requests_in_order_and_guards_its_pages() -> None:
    site = Site(
        pages={"/": "<p>login</p>", "/home": "<p>home</p>", "/?page=2": "<p>two</p>"},
        logins={"/login": Login({"user": "ada", "pw": "x"}, "/home", "/?failed=1")},
        guarded=("/home",),
    )
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with serving(site) as server:
        base = server.origin

        def get(path: str, data: bytes | None = None) -> tuple[int, str, str]:
            try:
                with opener.open(base + path, data=data, timeout=10) as response:
                    return response.status, response.url, response.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.url, ""

        assert get("/home")[1] == base + "/"  # guarded: sent to the start page
        assert get("/?page=2")[2] == "<p>two</p>" and get("/?page=9")[2] == "<p>login</p>"
        assert get("/login", b"user=ada&pw=wrong")[1] == base + "/?failed=1"
        assert get("/login", b"user=ada&pw=x")[1] == base + "/home"
        assert get("/home")[2] == "<p>home</p>"
        assert get("/missing")[0] == 404 and get("/favicon.ico")[0] == 404
        hits = [(h.method, h.path, h.query, h.form, h.authed) for h in server.hits()]
    assert hits[0] == ("GET", "/home", "", (), False)
    assert ("POST", "/login", "", (("user", "ada"), ("pw", "wrong")), False) in hits
    assert ("GET", "/home", "", (), True) in hits, "the login cookie came back"
    assert all(path != "/favicon.ico" for _m, path, *_rest in hits)


def test_a_site_round_trips_through_its_file() -> None:
    site = Site(pages={"/": "x"}, posts={"/a": "/b"}, logins={"/l": Login({"u": "1"}, "/", "/")})
    assert Site.from_json(site.to_json()) == site
    with pytest.raises(ValueError, match="pages"):
        Site.from_json("[]")


# -- the bridge, with the real sandbox and Chromium -------------------------------------


@needs_browser
def test_the_playwright_subset_drives_the_page(sandbox: Sandbox) -> None:
    source = """
import os
from playwright.sync_api import sync_playwright, TimeoutError
with sync_playwright() as p:
    browser = p.chromium.launch(headless=False, slow_mo=50)
    page = browser.new_context().new_page()
    page.goto(os.environ["NS_PAGE_URL"])
    rows = page.locator("li.row")
    print(rows.count(), rows.all_inner_texts(), rows.nth(1).inner_text(), rows.last.inner_text())
    print(page.title(), page.url.endswith("/"), page.locator("#none").count())
    page.get_by_label("Quantity").fill("3")
    page.get_by_placeholder("Note for the courier…", exact=True).fill("ring twice")
    page.select_option("#c", label="Teal")
    page.get_by_label("Gift wrap").check()
    print(page.is_checked("input[name=gift]"))
    try:
        page.click("#not-there", timeout=100)
    except TimeoutError as exc:
        print("timeout", type(exc).__name__)
    png = page.screenshot(path="shot.png")
    print(png[:4] == b"\\x89PNG", os.path.getsize("shot.png") == len(png))
    # the element-handle API models write: query_selector(_all), wait_for_selector's element
    handles = page.query_selector_all("li.row")
    first = page.query_selector("li.row")
    print(len(handles), handles[2].text_content(), first.inner_text(), page.query_selector("#none"))
    print(page.wait_for_selector("ul").query_selector("li.row >> nth=1").text_content())
    page.get_by_role("button", name="Buy now").click()
    print(page.inner_text("#ok"), page.url.endswith("/done"))
    browser.close()
"""
    out, record = run(sandbox, source)
    lines = out.split("|")
    assert lines[0] == "3 ['alpha', 'beta', 'gamma'] beta gamma"
    assert lines[1] == "Shop True 0"
    assert lines[2:4] == ["True", "timeout TimeoutError"]
    assert lines[4:] == ["True True", "3 gamma alpha None", "beta", "Bought True"]
    posts = [h for h in record if h["method"] == "POST"]
    sent = [["qty", "3"], ["note", "ring twice"], ["colour", "t"], ["gift", "yes"]]
    assert [p["form"] for p in posts] == [sent]


@needs_browser
def test_a_solution_cannot_leave_the_tasks_site(sandbox: Sandbox) -> None:
    other_site = Site(pages={"/": "<p id='secret'>another service on this host</p>"})
    with serving(other_site) as other:
        source = f"""
import os, socket, urllib.request
from playwright.sync_api import sync_playwright, Error
for target in ({other.origin!r}, os.environ["NS_PAGE_URL"]):
    try:
        urllib.request.urlopen(target, timeout=2)
        print("direct: reached")
    except OSError as exc:
        print("direct: refused")
print("site.json" in os.listdir("."))
with sync_playwright() as p:
    page = p.chromium.launch().new_page()
    for url in ({other.origin!r}, "http://example.com/", "file:///etc/passwd"):
        try:
            page.goto(url)
            print("goto: reached")
        except Error as exc:
            print("goto: " + str(exc)[:40])
"""
        out, _record = run(sandbox, source)
        assert not other.hits(), "the other loopback service was reached"
    lines = out.split("|")
    assert lines[:2] == ["direct: refused", "direct: refused"], "the sandbox has no network"
    assert lines[2] == "False", "the pages are served, never left as files"
    assert all(line.startswith("goto: only the task's site") for line in lines[3:]), lines


@needs_browser
def test_a_starter_validator_reports_a_missing_function_and_a_crash(sandbox: Sandbox) -> None:
    challenge = render("web_automation.table_scan", "starter", 3)
    func = challenge.reference_solution.split("def ", 1)[1].split("(", 1)[0]
    empty = evaluate(sandbox, challenge, "x = 1\n")
    assert f"does not define a function named `{func}`" in empty.feedback
    good = evaluate(sandbox, challenge, challenge.reference_solution)
    assert good.passed, good.feedback


@needs_browser
@pytest.mark.parametrize("name", ["web_automation.form_fill", "web_automation.table_scan"])
def test_a_starter_solution_may_import_playwright_as_models_write_it(
    sandbox: Sandbox, name: str
) -> None:
    # The default model's first line for a "Playwright page" function is almost always
    # this import (every one of its 6 starter answers in bench_web); the checker imports
    # the solution with the workspace off sys.path, so the shim must be reachable anyway.
    challenge = render(name, "starter", 3)
    typed = "from playwright.sync_api import Page, TimeoutError, sync_playwright\n\n"
    good = evaluate(sandbox, challenge, typed + challenge.reference_solution)
    assert good.passed, good.feedback
    wrong = evaluate(sandbox, challenge, typed + challenge.wrong_solution)
    assert not wrong.passed and "playwright" not in wrong.feedback.lower(), wrong.feedback


@needs_browser
def test_a_solved_web_challenge_keeps_its_final_page_in_the_trajectory(sandbox: Sandbox) -> None:
    challenge = render("web_automation.form_fill", "basic", 4)
    model = ScriptedModel([f"```python\n{challenge.reference_solution}```"])
    result = Solver(model, sandbox).single_attempt().solve(challenge, session_id="web")
    assert result.passed, result.trajectory.failure_reason
    [shot] = result.trajectory.extra["screenshots"]
    assert shot["number"] == 1 and shot["url"].endswith("/thanks")
    assert (shot["width"], shot["height"]) == (800, 600) and 0 < shot["bytes"] <= 200_000
    assert base64.b64decode(shot["png_base64"]).startswith(b"\x89PNG")


@needs_browser
def test_evaluations_share_one_chromium_each_on_a_fresh_context(sandbox: Sandbox) -> None:
    # Cookies ignore the port, so one left by the first evaluation's site would reach the
    # second's (another port, same host) if the context were kept: it is not.
    visits = Site(
        pages={
            "/": "<p id='n'></p><script>const n = +(document.cookie.split('visits=')[1] || 0)"
            " + 1; document.cookie = 'visits=' + n + '; path=/';"
            " document.getElementById('n').textContent = n;</script>"
        }
    )
    source = """
import os
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    page = p.chromium.launch().new_page()
    page.goto(os.environ["NS_PAGE_URL"])
    print("visits", page.inner_text("#n"))
"""
    _WARM.close()  # earlier tests of this process (two at once) may have left two idle
    tags = []
    for _ in range(2):
        out, _record = run(sandbox, source, visits)
        assert out == "visits 1"
        [warm] = _WARM._idle  # the one session, kept started between evaluations
        tags.append(warm._tag)
    assert tags[0] == tags[1] and tags[0]  # the same Chromium process answered both


# -- where the cluster is left out ------------------------------------------------------


def test_without_a_browser_practice_leaves_the_cluster_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(executable: Path | None = None) -> Path:
        raise BrowserUnavailableError("the browser tool needs Chromium")

    monkeypatch.setattr("nightschool.challenges._webrun.find_chromium", missing)
    assert web_problem() == "the browser tool needs Chromium"
    assert WEB_CLUSTER not in practice_clusters() and "sql" in practice_clusters()
    monkeypatch.setattr("nightschool.challenges._webrun.find_chromium", browser.find_chromium)
    if HAS_CHROMIUM:
        assert web_problem() is None and WEB_CLUSTER in practice_clusters()


def test_the_model_never_writes_web_challenges() -> None:
    assert WEB_CLUSTER not in GENERATED_CLUSTERS
    generator = ChallengeGenerator(ScriptedModel(["unused"]), Sandbox(SandboxConfig()))
    with pytest.raises(
        ValueError, match="unknown cluster or tier for a generated challenge: 'web_automation'"
    ):
        generator.generate(GenerationRequest(cluster=WEB_CLUSTER, tier="basic"))


# -- the prompts ------------------------------------------------------------------------


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("name", [t.name for t in templates(WEB_CLUSTER)])
def test_prompts_say_how_the_page_is_reached(name: str, tier: str) -> None:
    challenge = render(name, tier, 11)
    assert challenge.solution_file == "solution.py"
    if tier == "starter":
        assert "Playwright page" in challenge.prompt
    else:
        assert "NS_PAGE_URL" in challenge.prompt and "sync_playwright" in challenge.prompt
    assert "site.json" in challenge.setup_script
    if tier != "starter":
        assert "os.environ['NS_PAGE_URL']" in challenge.reference_solution


@pytest.mark.parametrize("tier", ["intermediate", "expert"])
def test_a_tables_rows_are_read_from_the_page_not_the_prompt(
    tier: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    challenge = render("web_automation.table_scan", tier, 5)
    monkeypatch.chdir(tmp_path)
    exec(challenge.setup_script, {})
    site = Site.from_json((tmp_path / "site.json").read_text(encoding="utf-8"))
    later = site.pages["/?page=3"]
    cells = [c.split("</td>")[0] for c in later.split("<td>")[1:]]
    names = [cell for cell in cells if " " in cell and not cell[0].isdigit()]  # the key column
    assert len(names) >= 5
    assert sum(name in challenge.prompt for name in names) <= 1, "only a looked-up name is shown"
