"""Worker liveness: one lease row per worker; a live worker re-enqueues a dead one's tasks.

DBOS recovers a crashed executor's workflows when that executor restarts, or through its hosted
Conductor. Workers here get a fresh id per process, so the takeover is ours: the project's lease
rule (see docs/decisions/background.md, "owners and leases") applied to whole workers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import sqlalchemy as sa

from ._protocol import to_sqlalchemy_url

__all__ = ["ExecutorLeases"]

_log = logging.getLogger("agentstream.durable")
_metadata = sa.MetaData()
_workers = sa.Table(
    "agentstream_durable_workers",
    _metadata,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("lease_expires_at", sa.Float, nullable=False, index=True),
)


def _create_table(engine: sa.Engine) -> None:
    """Create the lease table once, however many workers start together: PostgreSQL's ``CREATE
    TABLE`` races ("duplicate key … pg_type_typname_nsp_index") after both workers saw no table,
    so the check and the creation run under a transaction-scoped advisory lock there; elsewhere a
    creation that lost the race is fine if the table now exists."""
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('agentstream_durable_workers'))"))
            _metadata.create_all(conn)
    except sa.exc.DBAPIError:
        if not sa.inspect(engine).has_table(_workers.name):
            raise


class ExecutorLeases:
    """Renews this worker's lease every `lease_sec / 3` and sweeps for expired ones in a thread.

    Taking over is a compare-and-delete on (executor id, expired lease): of several live workers
    exactly one wins, and only the winner calls `recover(dead_executor_id)`. A worker that was only
    stalled finds its row gone at its next renewal and logs it; DBOS fences its writes (a
    re-enqueued workflow's steps are recorded once), so the stalled run cannot record a step twice.
    """

    def __init__(
        self,
        database_url: str,
        executor_id: str,
        lease_sec: float,
        recover: Callable[[str], int],
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lease_sec <= 0:
            raise ValueError(f"lease_sec must be > 0, got {lease_sec!r}")
        self._engine = sa.create_engine(to_sqlalchemy_url(database_url), pool_pre_ping=True)
        self._executor_id = executor_id
        self._lease_sec = lease_sec
        self._recover = recover
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        _create_table(self._engine)

    def start(self) -> None:
        self.renew()
        self._thread = threading.Thread(target=self._run, name="agentstream-durable-leases", daemon=True)
        self._thread.start()

    def stop(self, *, release: bool) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if release:
            with self._engine.begin() as conn:
                conn.execute(
                    _workers.update()
                    .where(_workers.c.executor_id == self._executor_id)
                    .values(lease_expires_at=0.0)
                )
        self._engine.dispose()

    def _run(self) -> None:
        while not self._stop.wait(self._lease_sec / 3):
            try:
                self.renew()
                self.sweep()
            except Exception:  # a database blip must not kill the worker's only liveness thread
                _log.exception("lease heartbeat failed; retrying")

    def renew(self) -> None:
        expires = self._clock() + self._lease_sec
        with self._engine.begin() as conn:
            updated = conn.execute(
                _workers.update()
                .where(_workers.c.executor_id == self._executor_id)
                .values(lease_expires_at=expires)
            ).rowcount
            if not updated:
                conn.execute(
                    _workers.insert().values(executor_id=self._executor_id, lease_expires_at=expires)
                )

    def sweep(self) -> list[str]:
        """Take over every expired worker this call wins; returns their ids."""
        now = self._clock()
        with self._engine.begin() as conn:
            expired = (
                conn.execute(sa.select(_workers.c.executor_id).where(_workers.c.lease_expires_at <= now))
                .scalars()
                .all()
            )
        taken: list[str] = []
        for executor_id in expired:
            with self._engine.begin() as conn:
                won = conn.execute(
                    _workers.delete().where(
                        (_workers.c.executor_id == executor_id) & (_workers.c.lease_expires_at <= now)
                    )
                ).rowcount
            if won and executor_id != self._executor_id:
                count = self._recover(executor_id)
                _log.warning(
                    "worker %s's lease expired; re-enqueued its %d unfinished tasks", executor_id, count
                )
                taken.append(executor_id)
        return taken
