"""The backend contract: order, laziness, errors, the missing extra, CLI misuse."""

from __future__ import annotations

import importlib
import pickle
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.errors import EXIT_CODES, ModelUnavailableError, UserError
from nightschool.parallel import LocalBackend, LocalResources, RayBackend, derive_id, make_backend


def slow_square(delay: float, x: int) -> int:
    time.sleep(delay * (3 - x % 3))  # later items finish first
    return x * x


def fail_on_three(_context: None, x: int) -> int:
    if x == 3:
        raise ModelUnavailableError("model server down", status_code=503)
    return x


def test_local_backend_is_lazy_and_in_order() -> None:
    pulled: list[int] = []

    def items() -> Any:
        for x in range(4):
            pulled.append(x)
            yield x

    out = LocalBackend().map(lambda _c, x: x + 1, None, items())
    assert next(out) == 1 and pulled == [0]  # item 1 is pulled only after result 0
    assert list(out) == [2, 3, 4]


def test_ray_backend_yields_in_submission_order(ray_cluster: Any) -> None:
    backend = RayBackend(workers=2)
    assert not backend.started  # joined the running instance: it will not shut it down
    assert list(backend.map(slow_square, 0.05, range(6))) == [x * x for x in range(6)]
    with pytest.raises(ModelUnavailableError) as raised:
        list(backend.map(fail_on_three, None, range(6)))
    assert raised.value.status_code == 503 and raised.value.message == "model server down"
    backend.close()
    assert ray_cluster.is_initialized()


def test_missing_ray_is_a_user_error_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_ray(name: str, *args: Any) -> Any:
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real(name, *args)

    monkeypatch.setattr("nightschool.parallel._ray.importlib.import_module", no_ray)
    with pytest.raises(UserError) as raised:
        make_backend("ray", workers=2)
    assert raised.value.hint == "pip install 'nightschool[ray]'"


def test_misuse() -> None:
    with pytest.raises(UserError):
        make_backend("dask")
    with pytest.raises(UserError):
        make_backend("local", address="auto")
    with pytest.raises(TypeError):
        pickle.dumps(LocalResources(object(), object()))  # type: ignore[arg-type]
    assert derive_id("eval", "r", "t") == derive_id("eval", "r", "t") != derive_id("eval", "r", "u")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["dream", "--backend", "ray"], "nothing to run in parallel"),
        (
            ["eval", "run", "--suite", "humaneval", "--workers", "2"],
            "--workers needs --backend ray",
        ),
        (["eval", "run", "--suite", "humaneval", "--backend", "dask"], "--backend must be"),
        (["evolve", "--backend", "ray", "--unsandboxed"], "needs the bubblewrap sandbox"),
        (
            ["eval", "learning-curve", "--cycles", "1", "--ray-address", "auto"],
            "needs --backend ray",
        ),
    ],
)
def test_cli_refuses_misuse_before_any_work(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == EXIT_CODES["usage"], result.output
    assert needle in " ".join(result.output.split())
