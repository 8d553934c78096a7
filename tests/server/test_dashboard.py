"""The dashboard over a populated store, through FastAPI's TestClient: login and
its cookie, host and origin checks, every page, pagination, lineage, the
confirmed retraction, and the incrementally maintained aggregates."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from bench.data.dashboard_history import History, populate
from fastapi.testclient import TestClient

from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.server.dashboard import (
    COOKIE_NAME,
    SESSION_MAX_AGE_S,
    DashboardConfig,
    standalone_app,
)
from nightschool.server.dashboard._aggregates import TrajectoryCounts
from nightschool.server.dashboard._auth import Gate
from nightschool.server.dashboard._queries import current_champion
from nightschool.server.dashboard._results import learning_curves
from nightschool.store import Store
from nightschool.strategies import champions
from nightschool.trajectory import Correction, Outcome, Trajectory

KEY = "dashboard-test-key-7f3a9c"
LOCAL = "http://127.0.0.1"


class Populated:
    def __init__(self, root: Path, trajectories: int = 300) -> None:
        self.store = Store.open(root / "nightschool.db", synchronous="NORMAL")
        self.memory = SkillMemory(self.store, embedder=HashingEmbedder())
        self.history: History = populate(
            self.store, self.memory, trajectories=trajectories, evolve_dir=root / "evolve"
        )
        self.config = DashboardConfig(page_size=20, evolve_dirs=(root / "evolve",))

    def client(self, api_key: str | None = KEY, **kwargs: Any) -> TestClient:
        app = standalone_app(self.store, memory=self.memory, api_key=api_key, config=self.config)
        return TestClient(app, base_url=LOCAL, follow_redirects=False, **kwargs)

    def close(self) -> None:
        self.memory.close()
        self.store.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Populated]:
    """A populated store that tests only read."""
    populated = Populated(tmp_path_factory.mktemp("dashboard"))
    yield populated
    populated.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Populated]:
    """A populated store a test may write to (retraction, appends)."""
    populated = Populated(tmp_path / "fresh", trajectories=120)
    yield populated
    populated.close()


def logged_in(populated: Populated) -> TestClient:
    client = populated.client()
    response = client.post("/dashboard/login", data={"key": KEY, "next": "/dashboard/"})
    assert response.status_code == 303
    return client


# -- access ----------------------------------------------------------------------


def test_login_sets_a_signed_httponly_strict_cookie_and_no_key_in_any_url(
    shared: Populated,
) -> None:
    client = shared.client()
    first = client.get("/dashboard/trajectories?kind=chat")
    assert first.status_code == 303
    location = first.headers["location"]
    assert urlsplit(location).path == "/dashboard/login"
    assert parse_qs(urlsplit(location).query)["next"] == ["/dashboard/trajectories?kind=chat"]
    form = client.get(location)
    assert form.status_code == 200
    assert 'method="post"' in form.text and 'type="password"' in form.text
    login = client.post(
        "/dashboard/login", data={"key": KEY, "next": "/dashboard/trajectories?kind=chat"}
    )
    assert login.status_code == 303
    assert login.headers["location"] == "/dashboard/trajectories?kind=chat"
    cookie = login.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=")
    for attribute in (
        "HttpOnly",
        "SameSite=strict",
        "Path=/dashboard",
        f"Max-Age={SESSION_MAX_AGE_S}",
    ):
        assert attribute.lower() in cookie.lower()
    assert KEY not in cookie
    page = client.get("/dashboard/trajectories?kind=chat")
    assert page.status_code == 200
    assert KEY not in page.text
    for url in re.findall(r'(?:href|src|action)="([^"]+)"', page.text):
        assert KEY not in unescape(url)


def test_a_wrong_key_a_forged_cookie_or_a_key_in_the_url_is_refused(shared: Populated) -> None:
    client = shared.client()
    wrong = client.post("/dashboard/login", data={"key": "not-the-key", "next": "/dashboard/"})
    assert wrong.status_code == 401
    assert "wrong key" in wrong.text
    assert "set-cookie" not in wrong.headers
    assert client.get(f"/dashboard/?key={KEY}").status_code == 303
    assert client.get(f"/dashboard/?api_key={KEY}").status_code == 303
    forged = shared.client(cookies={COOKIE_NAME: "1700000000." + "0" * 64})
    assert forged.get("/dashboard/").status_code == 303
    bearer = shared.client(headers={"Authorization": f"Bearer {KEY}"})
    assert bearer.get("/dashboard/").status_code == 200
    wrong_bearer = shared.client(headers={"Authorization": "Bearer nope"})
    assert wrong_bearer.get("/dashboard/").status_code == 303
    assert client.post("/dashboard/lessons/L-x/retract", data={}).status_code == 401


def test_login_never_redirects_to_another_site(shared: Populated) -> None:
    client = shared.client()
    for target in ("https://evil.example/", "//evil.example/dashboard", "/admin/lessons"):
        response = client.post("/dashboard/login", data={"key": KEY, "next": target})
        assert response.headers["location"] == "/dashboard/"


def test_session_cookies_expire_and_die_with_the_key() -> None:
    clock = [1_000_000.0]
    gate = Gate(KEY, now=lambda: clock[0])
    cookie = gate.session_cookie()
    assert gate._valid_cookie(cookie)
    clock[0] += SESSION_MAX_AGE_S + 1
    assert not gate._valid_cookie(cookie)
    assert not Gate("another-key", now=lambda: 1_000_000.0)._valid_cookie(cookie)
    assert not gate._valid_cookie(cookie.replace(".", ".f", 1))


def test_logout_clears_the_cookie(shared: Populated) -> None:
    client = logged_in(shared)
    overview = client.get("/dashboard/")
    token = re.search(r'name="token" value="([^"]+)"', overview.text)
    assert token is not None
    assert client.post("/dashboard/logout", data={"token": "forged"}).status_code == 403
    out = client.post("/dashboard/logout", data={"token": token.group(1)})
    assert out.status_code == 303
    assert (
        f'{COOKIE_NAME}=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    )
    client.cookies.clear()
    assert client.get("/dashboard/").status_code == 303


def test_without_a_key_no_login_but_only_loopback_names(shared: Populated) -> None:
    client = shared.client(api_key=None)
    assert client.get("/dashboard/").status_code == 200
    assert "Log out" not in client.get("/dashboard/").text
    assert client.get("/dashboard/login").headers["location"] == "/dashboard/"
    rebinding = client.get("/dashboard/", headers={"host": "evil.example:8001"})
    assert rebinding.status_code == 403
    assert "loopback" in rebinding.text


def test_pages_refuse_framing_and_scripts(shared: Populated) -> None:
    page = logged_in(shared).get("/dashboard/")
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "script" not in page.headers["content-security-policy"]
    assert "<script" not in page.text


# -- pages ------------------------------------------------------------------------


def test_every_page_renders_against_a_populated_store(shared: Populated) -> None:
    client = logged_in(shared)
    h = shared.history
    lesson = h.lesson_ids[0]
    strategies = client.get("/dashboard/strategies")
    run_key = re.search(r"/dashboard/strategies/runs/(\w+)", strategies.text)
    assert run_key is not None
    expected = {
        "/dashboard/": ["Is the agent getting better?", "algo", "expert", "journal", "g1c1"],
        "/dashboard/trajectories": ["match", "selfplay"],
        f"/dashboard/trajectories/{h.source_of[lesson]}": ["Tool calls", "run_solution", lesson],
        "/dashboard/lessons": ["lessons · active", lesson],
        "/dashboard/lessons?kind=skill": ["skills · active"],
        "/dashboard/lessons?status=retracted": [h.retracted_lesson_id],
        f"/dashboard/lessons/{lesson}": ["Source trajectory", "Reflection", "Exposures"],
        "/dashboard/evals": ["regression", "Learning curves", "not shown better"],
        f"/dashboard/evals/{h.eval_run_ids[1]}": ["regression:", "vs previous"],
        "/dashboard/strategies": ["g1c1", "promotion", "lift +0.150"],
        f"/dashboard/strategies/runs/{run_key.group(1)}": ["Generation 1", "Lineage", "PROMOTE"],
        "/dashboard/diary": ["The story so far", "I practised"],
    }
    for path, needles in expected.items():
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[:500])
        for needle in needles:
            assert needle in response.text, (path, needle)
    for plot in ("kinds", "clusters", "evals", "curve-curve"):
        svg = client.get(f"/dashboard/plots/{plot}.svg")
        assert svg.status_code == 200
        assert svg.headers["content-type"] == "image/svg+xml"
        assert svg.text.lstrip().startswith("<?xml") and "<svg" in svg.text
    assert client.get("/dashboard/static/dashboard.css").status_code == 200
    assert client.get("/dashboard/static/../_app.py").status_code == 404


def test_unknown_records_and_bad_parameters_get_html_errors(shared: Populated) -> None:
    client = logged_in(shared)
    for path, status in (
        ("/dashboard/trajectories/nope", 404),
        ("/dashboard/lessons/L-000000000000", 404),
        ("/dashboard/evals/nope", 404),
        ("/dashboard/strategies/runs/nope", 404),
        ("/dashboard/plots/nope.svg", 404),
        ("/dashboard/trajectories?outcome=maybe", 400),
        ("/dashboard/lessons?page=0", 400),
        ("/dashboard/lessons?page=x", 400),
        ("/dashboard/diary?before=x", 400),
    ):
        response = client.get(path)
        assert response.status_code == status, path
        assert response.headers["content-type"].startswith("text/html"), path


def _rows(text: str) -> list[str]:
    return re.findall(r'<a href="/dashboard/trajectories/([0-9a-f]{32})"', text)


def _link(text: str, rel: str) -> str | None:
    found = re.search(rf'rel="{rel}" href="([^"]+)"', text)
    return unescape(found.group(1)) if found else None


def test_trajectory_pages_walk_every_row_once_newest_first(shared: Populated) -> None:
    client = logged_in(shared)
    total = shared.store.counts()["trajectories"]
    seen: list[str] = []
    page = client.get("/dashboard/trajectories")
    assert f"{total:,} match" in page.text
    pages = [page.text]
    while (older := _link(page.text, "next")) is not None:
        page = client.get(older)
        assert page.status_code == 200
        pages.append(page.text)
    for text in pages:
        rows = _rows(text)
        assert len(rows) <= shared.config.page_size
        seen.extend(rows)
    assert len(seen) == total == len(set(seen))
    newest_first = shared.store.query(
        "SELECT id FROM trajectories ORDER BY timestamp DESC, rowid DESC"
    )
    assert seen == [row[0] for row in newest_first]
    newer = _link(pages[2], "prev")
    assert newer is not None
    assert _rows(client.get(newer).text) == _rows(pages[1])


def test_filters_and_their_totals(shared: Populated) -> None:
    client = logged_in(shared)
    failed = client.get("/dashboard/trajectories?outcome=failed&kind=selfplay")
    expected = shared.store.query(
        "SELECT COUNT(*) FROM trajectories_effective WHERE outcome = 'failed' "
        "AND task_kind = 'selfplay'"
    )[0][0]
    assert f"{expected:,} match" in failed.text
    for trajectory_id in _rows(failed.text):
        t = shared.store.get_trajectory(trajectory_id)
        assert t is not None and t.outcome == Outcome.FAILED and t.task_kind == "selfplay"
    corrected = client.get("/dashboard/trajectories?corrected=yes")
    assert set(_rows(corrected.text)) == set(shared.history.corrected)
    assert "corrected</span>" in corrected.text


def test_lineage_links_source_reflection_exposures_and_back(shared: Populated) -> None:
    client = logged_in(shared)
    lesson = shared.history.lesson_ids[0]
    page = client.get(f"/dashboard/lessons/{lesson}").text
    source = shared.history.source_of[lesson]
    assert f'href="/dashboard/trajectories/{source}"' in page
    assert f'href="/dashboard/trajectories/{shared.history.reflection_of[lesson]}"' in page
    for exposed in shared.history.exposed[lesson]:
        assert f'href="/dashboard/trajectories/{exposed}"' in page
    assert f'href="/dashboard/lessons/{lesson}/retract"' in page
    back = client.get(f"/dashboard/trajectories/{source}").text
    assert f'href="/dashboard/lessons/{lesson}"' in back
    shown_to = client.get(f"/dashboard/trajectories/{shared.history.exposed[lesson][0]}").text
    assert f'href="/dashboard/lessons/{lesson}"' in shown_to
    retracted = client.get(f"/dashboard/lessons/{shared.history.retracted_lesson_id}").text
    assert "retracted" in retracted and "user correction of the source trajectory" in retracted
    assert '/retract"' not in retracted


# -- retraction ---------------------------------------------------------------------


def test_retract_needs_the_confirmation_and_then_really_retracts(fresh: Populated) -> None:
    client = logged_in(fresh)
    target, bystander = fresh.history.lesson_ids[0], fresh.history.lesson_ids[1]
    before = fresh.memory.get(bystander)
    url = f"/dashboard/lessons/{target}/retract"
    confirm = client.get(url)
    assert confirm.status_code == 200
    token = re.search(
        rf'action="{url}">\s*<input type="hidden" name="token" value="([^"]+)"', confirm.text
    )
    assert token is not None
    unconfirmed = client.post(url, data={"token": token.group(1)})
    assert unconfirmed.status_code == 400
    assert "tick the box" in unconfirmed.text
    forged = client.post(url, data={"confirm": "yes", "token": "0" * 64})
    assert forged.status_code == 403
    cross_site = client.post(
        url,
        data={"confirm": "yes", "token": token.group(1)},
        headers={"origin": "https://evil.example"},
    )
    assert cross_site.status_code == 403
    other_token = client.post(
        f"/dashboard/lessons/{bystander}/retract",
        data={"confirm": "yes", "token": token.group(1)},
    )
    assert other_token.status_code == 403
    assert fresh.memory.get(target) is not None
    done = client.post(
        url, data={"confirm": "yes", "token": token.group(1), "reason": "wrong advice"}
    )
    assert done.status_code == 303
    assert done.headers["location"] == f"/dashboard/lessons/{target}"
    assert fresh.memory.get(target) is None
    archived = [a for a in fresh.memory.archived() if a.id == target]
    assert archived and archived[0].extra["archive"]["reason"] == "wrong advice"
    assert fresh.memory.get(bystander) == before
    page = client.get(f"/dashboard/lessons/{target}").text
    assert "wrong advice" in page and "Retract…" not in page
    again = client.get(f"/dashboard/lessons/{target}/retract")
    assert again.status_code == 303


def test_a_server_without_a_playbook_shows_lessons_read_only(shared: Populated) -> None:
    app = standalone_app(shared.store, memory=None, api_key=None, config=shared.config)
    client = TestClient(app, base_url=LOCAL, follow_redirects=False)
    lesson = shared.history.lesson_ids[0]
    page = client.get(f"/dashboard/lessons/{lesson}").text
    assert '/retract"' not in page and "nightschool lessons retract" in page
    assert client.get(f"/dashboard/lessons/{lesson}/retract").status_code == 409


# -- aggregates -----------------------------------------------------------------------


def test_aggregates_stay_exact_through_appends_and_corrections(fresh: Populated) -> None:
    counts = TrajectoryCounts(fresh.store)
    expected = fresh.store.counts()

    def check() -> None:
        snapshot = counts.refresh()
        now = fresh.store.counts()
        assert snapshot.total() == now["trajectories"]
        assert snapshot.by_outcome() == {k: now[k] for k in ("passed", "failed", "unknown")}
        for kind, cluster, tier, outcome, n in fresh.store.query(
            "SELECT task_kind, COALESCE(cluster, ''), COALESCE(tier, ''), outcome, COUNT(*) "
            "FROM trajectories_effective GROUP BY 1, 2, 3, 4"
        ):
            assert snapshot.total(kinds=[kind], cluster=cluster, tier=tier, outcome=outcome) == n

    check()
    assert counts.refresh().total() == expected["trajectories"]
    new = fresh.store.append_trajectories(
        [
            Trajectory(task_kind="selfplay", cluster="sql", tier="basic", outcome=Outcome.FAILED)
            for _ in range(7)
        ]
    )
    check()
    fresh.store.add_correction(
        Correction(trajectory_id=new[0].id, outcome=Outcome.PASSED, source="verifier")
    )
    check()
    fresh.store.add_correction(
        Correction(
            trajectory_id=new[0].id, outcome=Outcome.FAILED, source="user", authority="human"
        )
    )
    check()
    old = fresh.history.trajectory_ids[3]
    fresh.store.add_correction(
        Correction(trajectory_id=old, outcome=Outcome.UNKNOWN, source="user", authority="human")
    )
    check()


def test_the_overview_current_champion_follows_the_registry(fresh: Populated) -> None:
    shown = current_champion(fresh.store)
    registry = champions.current(fresh.store)
    assert shown is not None and registry is not None and shown["id"] == registry.id
    champions.rollback(fresh.store, note="back to the baselines")
    assert champions.current(fresh.store) is None
    assert current_champion(fresh.store) is None


def test_learning_curve_rebuilt_with_the_start_results_reused(shared: Populated) -> None:
    (curve,) = learning_curves(shared.store)
    assert curve.session_id == "curve"
    assert curve.items == 24
    assert {(r["checkpoint"], r["arm"], r["set"]) for r in curve.rows} == {
        (c, arm, s) for c, arm in ((0, "none"), (1, "both"), (2, "both")) for s in ("a", "b")
    }
    assert all(r["n"] == 12 for r in curve.rows)
    assert {(v["checkpoint"], v["set"]) for v in curve.verdicts} == {
        (1, "a"),
        (1, "b"),
        (2, "a"),
        (2, "b"),
    }


# -- wiring ---------------------------------------------------------------------------


def test_create_app_mounts_the_dashboard_behind_its_own_login(shared: Populated) -> None:
    from tests.server.test_server_app import FakePipeline

    from nightschool.server import create_app

    app = create_app(
        FakePipeline(shared.store),
        store=shared.store,
        memory=shared.memory,
        api_key=KEY,
        model_name="m",
    )
    client = TestClient(app, base_url=LOCAL, follow_redirects=False)
    assert client.get("/dashboard/").status_code == 303
    assert client.get("/admin/trajectories").status_code == 401
    assert client.post("/dashboard/login", data={"key": KEY}).status_code == 303
    assert client.get("/dashboard/").status_code == 200
    assert client.get("/admin/trajectories").status_code == 401  # a cookie is not an API key
    paths = client.get("/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert not any(path.startswith("/dashboard") for path in paths["paths"])


def test_the_dashboard_command_refuses_a_public_address_without_a_key() -> None:
    from typer.testing import CliRunner

    from nightschool.cli import app

    runner = CliRunner()
    public = runner.invoke(app, ["dashboard", "--host", "0.0.0.0", "--port", "0"])
    assert public.exit_code == 2, public.output
    assert "without an API key" in public.output
    missing = runner.invoke(app, ["dashboard", "--port", "0"])
    assert missing.exit_code == 2, missing.output
    assert "no database" in missing.output


def test_every_page_renders_on_an_empty_store(store: Store) -> None:
    client = TestClient(
        standalone_app(store, memory=None, api_key=None), base_url=LOCAL, follow_redirects=False
    )
    assert client.get("/dashboard").status_code in (307, 308)
    for path in (
        "/dashboard/",
        "/dashboard/trajectories",
        "/dashboard/lessons",
        "/dashboard/evals",
        "/dashboard/strategies",
        "/dashboard/diary",
        "/dashboard/plots/kinds.svg",
        "/dashboard/plots/clusters.svg",
        "/dashboard/plots/evals.svg",
    ):
        assert client.get(path).status_code == 200, path
    assert "No trajectory matches" in client.get("/dashboard/trajectories").text
    assert "no evolved strategy promoted" in client.get("/dashboard/").text
