"""Session-wide test settings: the services the collected tests need are checked before any runs.

A test needs a service when it uses the ``pg_dsn`` or ``redis_url`` fixture, carries
``@pytest.mark.services(...)`` (a parametrised backend carries it on its param), or lives in a
directory of ``DIRECTORY_SERVICES``. One missing service ends the run before the first test, with one
line saying which and why (``tests/_services.py``); nothing is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _services

HERE = Path(__file__).resolve().parent
FIXTURE_SERVICES = {"pg_dsn": "postgres", "redis_url": "redis"}
# Whole directories whose modules import the service's package at import time: checked before
# collection, so a missing package is the one line, not a page of collection errors.
DIRECTORY_SERVICES: dict[str, tuple[str, ...]] = {
    "durable": ("dbos", "postgres"),
    "cluster": ("dbos", "uvicorn", "postgres"),
    "faults": ("redis-server", "uvicorn"),
}


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The PostgreSQL the tests use (``AGENTSTREAM_TEST_PG_DSN``); the run ends if it is unreachable."""
    _services.require("postgres")
    return _services.pg_dsn()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis the tests use (``AGENTSTREAM_TEST_REDIS_URL``); the run ends if it is unreachable."""
    _services.require("redis")
    return _services.redis_url()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"services(*names): the test needs these services (of {sorted(_services.CHECKS)})"
    )


def _directory_services(path: Path) -> tuple[str, ...]:
    try:
        first = path.resolve().relative_to(HERE).parts[0]
    except (ValueError, IndexError):
        return ()
    return DIRECTORY_SERVICES.get(first, ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Before collecting: a directory of ``DIRECTORY_SERVICES`` that the arguments reach needs its
    services now (its modules import them), and ending the run here gives one line."""
    config = session.config
    needs: list[str] = []
    for arg in config.args:
        target = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        for name, services in DIRECTORY_SERVICES.items():
            directory = HERE / name
            if target == directory or directory in target.parents or target in directory.parents:
                needs.extend(services)
    if needs and (message := _services.line(needs)) is not None:
        _services.fail_run(message)


def needed_services(item: pytest.Item) -> list[str]:
    names = [FIXTURE_SERVICES[f] for f in getattr(item, "fixturenames", ()) if f in FIXTURE_SERVICES]
    for marker in item.iter_markers("services"):
        names.extend(marker.args)
    names.extend(_directory_services(Path(item.path)))
    return names


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: only what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needs: list[str] = []
    for item in items:
        needs.extend(needed_services(item))
    if needs and (message := _services.line(needs)) is not None:
        _services.fail_run(message)
