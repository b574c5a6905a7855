"""Worker liveness for workers that do not come back: one lease row per executor, on the database's clock.

DBOS recovers an executor's workflows when a process with the same executor id launches again
(its own startup recovery); a worker that is gone for good needs another to re-enqueue its work.
Here every time is the database's (``now()``), never a machine's, and a sweeper takes over nobody
until it has itself been talking to the database for a whole lease: an outage that stopped every
worker's renewals (the database restarted, the network between all of them failed) expires every
lease at once, and the survivors must give the live ones a lease to renew first
(docs/decisions/durable.md, "Worker takeover").
"""

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
_executors = sa.Table(
    "agentstream_durable_executors",
    _metadata,
    sa.Column("executor_id", sa.Text, primary_key=True),
    # Seconds since the epoch on the database's clock (the only clock leases are compared on).
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)
_RETRY_SEC = 1.0
"""After a failed renewal the next one is tried this soon (a live worker must renew quickly once the
database is back, well inside the lease its sweeping peers grant it)."""


def _db_now(dialect: str) -> sa.ColumnElement[float]:
    """The database's clock in seconds since the epoch."""
    if dialect == "postgresql":
        return sa.cast(sa.extract("epoch", sa.func.now()), sa.Float)
    return (sa.func.julianday("now") - 2440587.5) * 86400.0  # SQLite: one machine, one clock


def _db_uptime(dialect: str) -> sa.ColumnElement[float]:
    """Seconds since the database server started (its restart expires every lease at once)."""
    if dialect == "postgresql":
        return sa.cast(sa.extract("epoch", sa.func.now() - sa.func.pg_postmaster_start_time()), sa.Float)
    return sa.literal(float("inf"))


def _create_table(engine: sa.Engine) -> None:
    """Create the lease table once, however many workers start together: PostgreSQL's ``CREATE
    TABLE`` races ("duplicate key … pg_type_typname_nsp_index") after both workers saw no table,
    so the check and the creation run under a transaction-scoped advisory lock there; elsewhere a
    creation that lost the race is fine if the table now exists."""
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(
                    sa.text("SELECT pg_advisory_xact_lock(hashtext('agentstream_durable_executors'))")
                )
            _metadata.create_all(conn)
    except sa.exc.DBAPIError:
        if not sa.inspect(engine).has_table(_executors.name):
            raise


class ExecutorLeases:
    """Renews this worker's lease every `lease_sec / 3` and sweeps for expired ones, in a thread;
    each round is one transaction (the renewal and, once healthy, the claim), then `tidy`.

    A takeover is a claim then a release: one ``UPDATE … RETURNING`` extends the expired rows by a
    lease for the sweeper that wins them (of several live workers exactly one), which then calls
    `recover(dead_executor_id)` and deletes the row. A sweeper that dies half-way leaves the row to
    expire again, for the next one. No claim is made unless this sweeper's own renewals have
    succeeded for the last `lease_sec` (measured on its monotonic clock: a duration, never compared
    across machines) and the database server has been up for a lease. A worker that was only
    stalled finds its row gone at its next renewal and logs it; DBOS fences the stalled execution's
    writes (a re-enqueued workflow's steps are recorded once).
    """

    def __init__(
        self,
        database_url: str,
        executor_id: str,
        lease_sec: float,
        recover: Callable[[str], int],
        monotonic: Callable[[], float] = time.monotonic,
        tidy: Callable[[], None] | None = None,
    ) -> None:
        if lease_sec <= 0:
            raise ValueError(f"lease_sec must be > 0, got {lease_sec!r}")
        # One connection is all the heartbeat needs; pre-ping finds the ones a restart killed.
        self._engine = sa.create_engine(
            to_sqlalchemy_url(database_url), pool_pre_ping=True, pool_size=1, max_overflow=0
        )
        self._dialect = self._engine.dialect.name
        self._executor_id = executor_id
        self._lease_sec = lease_sec
        self._recover = recover
        self._tidy = tidy
        self._monotonic = monotonic
        self._healthy_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        _create_table(self._engine)

    def start(self) -> None:
        self.beat()
        self._thread = threading.Thread(target=self._run, name="agentstream-durable-leases", daemon=True)
        self._thread.start()

    def stop(self, *, release: bool) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if release:
            try:
                with self._engine.begin() as conn:
                    conn.execute(_executors.delete().where(_executors.c.executor_id == self._executor_id))
            except sa.exc.DBAPIError:  # the database is away: the lease simply expires
                _log.warning("could not give up the lease of %s; it expires by itself", self._executor_id)
        self._engine.dispose()

    def _run(self) -> None:
        wait = self._lease_sec / 3
        while not self._stop.wait(wait):
            wait = self._lease_sec / 3 if self._round() else min(_RETRY_SEC, self._lease_sec / 3)

    def _round(self) -> bool:
        """Renew and, when this worker has been healthy for a lease, claim the expired peers, in
        one transaction (an idle worker's only periodic one here); then take the won ones over.
        Whether the renewal worked."""
        sweeping = self.healthy_for_a_lease()
        try:
            with self._engine.begin() as conn:
                self._renew(conn)
                won = self._claim(conn) if sweeping else []
        except Exception:  # a database blip must not kill the worker's only liveness thread
            self._healthy_since = None
            _log.warning("renewing the lease of %s failed; retrying", self._executor_id, exc_info=True)
            return False
        if self._healthy_since is None:
            self._healthy_since = self._monotonic()
        try:
            self._take_over(won)
            if self._tidy is not None:
                self._tidy()
        except Exception:
            self._healthy_since = None
            _log.exception("sweeping for expired workers failed; no takeover until a lease of health")
        return True

    def beat(self) -> bool:
        """Renew the lease; whether that worked (a failure restarts the health count)."""
        try:
            self.renew()
        except Exception:  # a database blip must not kill the worker's only liveness thread
            self._healthy_since = None
            _log.warning("renewing the lease of %s failed; retrying", self._executor_id, exc_info=True)
            return False
        if self._healthy_since is None:
            self._healthy_since = self._monotonic()
        return True

    def renew(self) -> None:
        with self._engine.begin() as conn:
            self._renew(conn)

    def _renew(self, conn: sa.Connection) -> None:
        expires = _db_now(self._dialect) + self._lease_sec
        mine = _executors.c.executor_id == self._executor_id
        if conn.execute(_executors.update().where(mine).values(expires_at=expires)).rowcount:
            return
        if self._healthy_since is not None:
            _log.warning("worker %s was taken over while it could not renew; it goes on", self._executor_id)
        conn.execute(_executors.insert().values(executor_id=self._executor_id, expires_at=expires))

    def healthy_for_a_lease(self) -> bool:
        since = self._healthy_since
        return since is not None and self._monotonic() - since >= self._lease_sec

    def sweep(self) -> list[str]:
        """Take over every expired worker this call wins; returns their ids."""
        if not self.healthy_for_a_lease():
            return []
        with self._engine.begin() as conn:
            won = self._claim(conn)
        self._take_over(won)
        return won

    def _claim(self, conn: sa.Connection) -> list[str]:
        """Extend the expired peers' rows by a lease for this sweeper (one winner per row)."""
        now = _db_now(self._dialect)
        return list(
            conn.execute(
                _executors.update()
                .where(
                    (_executors.c.expires_at < now)
                    & (_executors.c.executor_id != self._executor_id)
                    & (_db_uptime(self._dialect) >= self._lease_sec)
                )
                .values(expires_at=now + self._lease_sec)
                .returning(_executors.c.executor_id)
            )
            .scalars()
            .all()
        )

    def _take_over(self, won: list[str]) -> None:
        for executor_id in won:
            count = self._recover(executor_id)
            with self._engine.begin() as conn:
                conn.execute(_executors.delete().where(_executors.c.executor_id == executor_id))
            _log.warning(
                "worker %s's lease expired; re-enqueued its %d unfinished workflows", executor_id, count
            )
