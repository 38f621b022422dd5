"""A customer-service environment whose tools are SQL against PostgreSQL, behind agentloop's six functions.

`PostgresEnvironment("pg-0")` is one episode at a time of the world `pg-0` (seed 0) of a small subscriptions
service (`world.py`: customers, plans, subscriptions; `tools.py`: the tools as SQL). Nothing of agentloop's table
format is used: the state lives in the database and is read from it. The database is `AGENTLOOP_PG_URL`, or the
one `scripts/postgres.sh start` serves (`postgresql://agentloop@127.0.0.1:$AGENTLOOP_PG_PORT/agentloop`, port
55432 by default).

**Isolation: one transaction per episode, holding the episode's own copies of the tables.** Each world's base rows
are committed once, in a schema of their own (`world_pg_<seed>_<digest>`, created on first use under an advisory
lock, never written again). `init` takes a connection of its own, opens a transaction and copies the base rows into
the connection's temporary tables (created empty once per connection; with an `episode` row: who is authenticated,
whether the conversation was transferred); the tools' unqualified table names resolve to those copies. `close`
rolls the transaction back, which empties the copies again, and returns the connection to a per-process pool. Each
call runs in a savepoint, released on success and rolled back on a refusal, so a refused call changes nothing.
Why this and not a schema per episode:

- *Nothing to leak.* A schema per episode is committed state: a client killed between `init` and `close` leaves it
  behind until a janitor finds it. An episode here is an uncommitted transaction on temporary tables, and both
  die with the connection: a killed client's socket closes, its server process rolls back and exits, and nothing
  remains. A client that hangs without closing its socket is cut off by the server itself after
  `AGENTLOOP_PG_EPISODE_TTL` seconds (default 1800) idle in the transaction (`idle_in_transaction_session_timeout`,
  set on each connection; TCP keepalives for a host that vanished); `janitor()` does the same on demand.
- *Episodes never block each other.* Episodes writing straight into shared tables inside their transactions would
  be isolated too (nobody sees uncommitted rows) but would queue on row locks: two episodes changing the same
  subscription would wait for each other's `close`. Here every episode writes only its own copies; the base is only
  read.
- *"Differs from the base" is one query.* `state()` is each copy `EXCEPT` its base table, in the same transaction.
- *Cheap.* No DDL per episode: `init` is a few inserts (about a millisecond on a local server).

The cost: an episode holds a connection from `init` to `close` (the server's `max_connections`, 200 from
`scripts/postgres.sh`, bounds the episodes in flight).

`reward()` is this environment's own score, kept simple: 1.0 when the records the episode changed equal those the
task's gold actions change when replayed from the task's starting state (τ²-bench's database check; a task without
gold actions, or no task, expects no change), else 0.0; `info` counts the refused calls by category. The loop's
grader computes its own verdict from `state()` and `calls()`.
"""

from __future__ import annotations

import json
import math
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from pydantic import BaseModel

from examples.postgres_env.tools import SETUP_FUNCTIONS, TOOLS, Caller, Refusal, content
from examples.postgres_env.world import POLICY, TABLE_BY_NAME, TABLES, Table, base_schema, digest, rows, seed_of
from pipeline.digest import sha256_json
from pipeline.errors import InfrastructureError, InputError, TaskError
from pipeline.protocol import (
    SIDES,
    CallRecord,
    EnvironmentMetadata,
    EnvironmentState,
    Reward,
    Side,
    TableSchema,
    ToolResult,
)

DOMAIN = "examples.postgres_env:PostgresEnvironment"
APPLICATION = "agentloop-postgres-env"
"""The application_name of every connection this environment opens (the janitor and the tests look for it)."""
DEFAULT_TTL_S = 1800
CALL_FIELDS = ("name", "arguments", "id")
_SETUP_STATE_FIELDS = ("initialization_data", "message_history")
T = TypeVar("T")


class PostgresEnvUsageError(InputError, ValueError):
    """The environment used out of order, or with a world, task, call, table or predicate it does not serve."""


class PostgresTaskSetupError(TaskError, ValueError):
    """A task whose set-up actions cannot run; the message names the task and the action."""


class DatabaseUnavailable(InfrastructureError):
    """The database cannot be reached, or the connection was lost mid-episode: not the agent's doing."""


def database_url() -> str:
    """`AGENTLOOP_PG_URL`, or the database `scripts/postgres.sh start` serves."""
    if url := os.environ.get("AGENTLOOP_PG_URL"):
        return url
    return f"postgresql://agentloop@127.0.0.1:{os.environ.get('AGENTLOOP_PG_PORT') or 55432}/agentloop"


def episode_ttl_s() -> int:
    value = os.environ.get("AGENTLOOP_PG_EPISODE_TTL") or str(DEFAULT_TTL_S)
    if not value.isdigit() or int(value) <= 0:
        raise PostgresEnvUsageError(f"AGENTLOOP_PG_EPISODE_TTL={value!r}: expected a whole number of seconds > 0")
    return int(value)


# ---- connections ------------------------------------------------------------------------------------------------
class _Pool:
    """Idle connections per database URL, for this process only (a forked child starts with none)."""

    MAX_IDLE = 64

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[str, list[psycopg.Connection]] = {}
        self.pid = os.getpid()

    def take(self, url: str, *, fresh: bool = False) -> psycopg.Connection:
        """An idle pooled connection (unless `fresh`), else a new one."""
        with self.lock:
            if self.pid != os.getpid():  # a forked child: the parent's sockets are not ours to use
                self.idle, self.pid = {}, os.getpid()
            idle = self.idle.get(url, []) if not fresh else []
            while idle:
                conn = idle.pop()
                if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    return conn
        try:
            return psycopg.connect(
                url,
                autocommit=True,
                application_name=APPLICATION,
                connect_timeout=10,
                options=f"-c idle_in_transaction_session_timeout={episode_ttl_s() * 1000}",
            )
        except psycopg.Error as exc:
            raise DatabaseUnavailable(
                f"database {_shown_url(url)}: cannot connect ({_first_line(exc)}); start it with"
                " scripts/postgres.sh start, or set AGENTLOOP_PG_URL"
            ) from None

    def give(self, url: str, conn: psycopg.Connection) -> None:
        healthy = not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with self.lock:
            idle = self.idle.setdefault(url, [])
            if healthy and self.pid == os.getpid() and len(idle) < self.MAX_IDLE:
                idle.append(conn)
                return
        conn.close()

    def clear(self) -> None:
        with self.lock:
            conns = [c for idle in self.idle.values() for c in idle] if self.pid == os.getpid() else []
            self.idle = {}
        for conn in conns:
            conn.close()


_pool = _Pool()


def _on_connection(url: str, work: Callable[[psycopg.Connection], T], what: str) -> tuple[psycopg.Connection, T]:
    """`work` on a pooled connection, again on a new one when the pooled one turns out dead (the server restarted,
    or ended it); the connection and what `work` returned. Any other database error: DatabaseUnavailable."""
    for fresh in (False, True):
        conn = _pool.take(url, fresh=fresh)
        try:
            return conn, work(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            conn.close()
            if fresh:
                raise DatabaseUnavailable(f"{what} ({_first_line(exc)})") from None
        except psycopg.DataError as exc:  # a value the database refused: the caller's
            _pool.give(url, conn)
            raise PostgresEnvUsageError(f"{what}: the database refused a value ({_first_line(exc)})") from None
        except psycopg.Error as exc:
            conn.close()
            raise DatabaseUnavailable(f"{what} ({_first_line(exc)})") from None
    raise AssertionError("unreachable")


_bases: weakref.WeakKeyDictionary[psycopg.Connection, set[str]] = weakref.WeakKeyDictionary()
"""Per connection, the base schemas it has seen exist (per connection, not per URL: a server re-created at the same
address has none of them)."""
_bases_lock = threading.Lock()
_prepared: weakref.WeakSet[psycopg.Connection] = weakref.WeakSet()


def close_idle_connections() -> None:
    """Close this process's pooled connections (episodes in flight keep theirs)."""
    _pool.clear()


def janitor(url: str | None = None, ttl_s: float | None = None) -> int:
    """End every episode of this environment, from any client, idle in its transaction for more than `ttl_s`
    seconds (default `AGENTLOOP_PG_EPISODE_TTL`): its server process is terminated, which rolls the episode back
    and drops its tables. The number ended. The server does the same by itself after the TTL; this is for now."""
    url = url or database_url()
    ttl = episode_ttl_s() if ttl_s is None else ttl_s

    def end(conn: psycopg.Connection) -> int:
        found = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s"
            " AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
            " AND now() - state_change > make_interval(secs => %s)",
            (APPLICATION, float(ttl)),
        ).fetchone()
        return int(found[0]) if found else 0

    conn, ended = _on_connection(url, end, f"database {_shown_url(url)}: janitor failed")
    _pool.give(url, conn)
    return ended


def _ensure_base(conn: psycopg.Connection, seed: int, world_digest: str) -> str:
    """The base world's schema, created (once, whoever asks first) with its rows."""
    schema = base_schema(seed, world_digest)
    with _bases_lock:
        if schema in _bases.get(conn, ()):
            return schema
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema,))
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            data = rows(seed)
            for table in TABLES:
                columns = sql.SQL(", ").join(
                    sql.SQL("{} {}").format(sql.Identifier(c.name), sql.SQL(c.sql)) for c in table.columns
                )
                target = sql.Identifier(schema, table.name)
                conn.execute(sql.SQL("CREATE TABLE {} ({})").format(target, columns))
                names = sql.SQL(", ").join(map(sql.Identifier, table.column_names))
                marks = sql.SQL(", ").join(sql.Placeholder() * len(table.column_names))
                with conn.cursor() as cur:
                    cur.executemany(
                        sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(target, names, marks),
                        [tuple(r[c] for c in table.column_names) for r in data[table.name]],
                    )
    with _bases_lock:
        _bases.setdefault(conn, set()).add(schema)
    return schema


def _prepare(conn: psycopg.Connection, schema: str) -> None:
    """The connection's own empty copies of the tables (temporary: they live as long as the connection; every
    world's tables have the same columns), created once per connection, outside any episode's transaction."""
    if conn in _prepared:
        return
    statements = [
        sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (LIKE {} INCLUDING ALL)").format(
            sql.Identifier(table.name), sql.Identifier(schema, table.name)
        )
        for table in TABLES
    ]
    statements.append(
        sql.SQL("CREATE TEMP TABLE IF NOT EXISTS episode (authenticated_user_id text, transferred boolean NOT NULL)")
    )
    conn.execute(sql.SQL("; ").join(statements))
    _prepared.add(conn)


# ---- the environment --------------------------------------------------------------------------------------------
class PostgresEnvironment:
    """One world (`pg-<seed>`) of the subscriptions service, one episode at a time (see the module docstring)."""

    def __init__(self, world: str, *, url: str | None = None) -> None:
        seed = seed_of(world)
        if seed is None:
            raise PostgresEnvUsageError(f"world {world!r}: expected 'pg-' and a seed (0 … 999999), e.g. 'pg-0'")
        if url is not None and not isinstance(url, str):
            raise PostgresEnvUsageError(f"url: expected a postgresql:// URL, got {type(url).__name__}")
        self.world, self.seed, self.url = world, seed, url or database_url()
        self.world_digest = digest(seed)
        self._lock = threading.RLock()
        self._conn: psycopg.Connection | None = None
        self._schema: str | None = None
        self._task: dict[str, Any] | None = None
        self._ledger: list[CallRecord] = []
        self._said: list[tuple[str, str]] = []

    # ---- the six functions ------------------------------------------------------------------------------------
    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            domain=DOMAIN,
            world=self.world,
            world_digest=self.world_digest,
            policy=POLICY,
            tools=[t.schema() for t in TOOLS.values()],
            tool_kinds={name: t.kind for name, t in TOOLS.items()},
            tables={t.name: TableSchema(record=t.record_schema(), key=t.key, owner=t.owner) for t in TABLES},
            identity_fields=["email"],
        )

    def init(
        self, task: Mapping[str, Any] | BaseModel | None = None, *, authenticated_user_id: str | None = None
    ) -> EnvironmentState:
        """A fresh episode in `task`'s starting state (its `initial_state.initialization_actions` run as set-up
        calls: not recorded, ownership not checked); None: the base world. Returns its state."""
        task_json = self._task_json(task)
        if authenticated_user_id is not None and not isinstance(authenticated_user_id, str):
            raise PostgresEnvUsageError(
                f"authenticated_user_id: expected a customer id (a string) or None, got {authenticated_user_id!r}"
            )
        with self._lock:
            self.close()

            def open_episode(conn: psycopg.Connection) -> str:
                schema = _ensure_base(conn, self.seed, self.world_digest)
                _prepare(conn, schema)
                statements = [sql.SQL("BEGIN"), sql.SQL("SET LOCAL search_path TO pg_temp")]
                for table in TABLES:
                    base = sql.Identifier(schema, table.name)
                    mine = sql.Identifier(table.name)
                    statements += [
                        sql.SQL("DELETE FROM {}").format(mine),  # empty already: every episode is rolled back
                        sql.SQL("INSERT INTO {} SELECT * FROM {}").format(mine, base),
                    ]
                statements += [
                    sql.SQL("DELETE FROM episode"),
                    sql.SQL("INSERT INTO episode VALUES ({}, false)").format(sql.Literal(authenticated_user_id)),
                ]
                conn.execute(sql.SQL("; ").join(statements))
                return schema

            conn, schema = _on_connection(self.url, open_episode, f"world {self.world}: could not open an episode")
            self._conn, self._schema, self._task = conn, schema, task_json
            self._ledger, self._said = [], []
            try:
                self._setup(task_json)
            except BaseException:
                self.close()
                raise
            return self.state()

    def run(self, call: Mapping[str, Any] | BaseModel, side: Side = "assistant") -> ToolResult:
        """One tool call `{name, arguments}` by `side`; a refusal comes back as an error and changes nothing. Only
        the agent ('assistant') has tools here: a customer's call is refused."""
        if side not in SIDES:
            raise PostgresEnvUsageError(f"side {side!r}: expected one of {', '.join(map(repr, SIDES))}")
        name, arguments = self._call(call)
        with self._lock:
            self._started("run")
            if side == "user":
                result = ToolResult(
                    content=f"Error: unknown tool {name!r}: the customer has no tools in this environment",
                    error=True,
                    category="invalid_arguments",
                )
            else:
                result = self._execute(name, arguments, authorize=True)
            self._ledger.append(CallRecord(side=side, name=name, arguments=arguments, result=result))
            return result

    def state(self) -> EnvironmentState:
        with self._lock:
            conn, schema = self._started("state")
            changed = self._changed(conn, schema)
            episode = self._sql(conn, "SELECT authenticated_user_id, transferred FROM episode").fetchone()
            assert episode is not None
            return EnvironmentState(
                world_digest=self.world_digest,
                changed=changed,
                authenticated_user_id=episode[0],
                transferred=bool(episode[1]),
                hash=sha256_json({"base": self.world_digest, "changed": changed}),
            )

    def query_data(self, table: str, predicate: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """key → row of `table`'s rows whose fields equal `predicate`'s values ({field: value}; None matches a
        null), in key order: as the episode sees them, or the base world before `init`."""
        spec = TABLE_BY_NAME.get(table) if isinstance(table, str) else None
        if spec is None:
            raise PostgresEnvUsageError(f"unknown table {table!r}; tables are {', '.join(TABLE_BY_NAME)}")
        if predicate is None:
            predicate = {}
        if not isinstance(predicate, Mapping):
            raise PostgresEnvUsageError(
                f"predicate: expected an object {{field: value}}, got {type(predicate).__name__}"
            )
        conditions = []
        for field, value in predicate.items():
            if field not in spec.column_names:
                raise PostgresEnvUsageError(
                    f"predicate field {field!r}: table {table} has fields {', '.join(spec.column_names)}"
                )
            if value is None:
                conditions.append(sql.SQL("t.{} IS NULL").format(sql.Identifier(field)))
            elif isinstance(value, float) and not math.isfinite(value) or isinstance(value, str) and "\x00" in value:
                raise PostgresEnvUsageError(f"predicate field {field!r}: {value!r} is no value a record can hold")
            elif isinstance(value, str | int | float | bool):
                conditions.append(
                    sql.SQL("to_jsonb(t.{}) = {}::jsonb").format(sql.Identifier(field), sql.Literal(json.dumps(value)))
                )
            else:
                raise PostgresEnvUsageError(
                    f"predicate field {field!r}: expected a string, number, boolean or null, got {type(value).__name__}"
                )
        where = sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("true")
        with self._lock:
            if self._conn is None:
                conn, found = _on_connection(
                    self.url,
                    lambda conn: self._select(
                        conn,
                        sql.Identifier(_ensure_base(conn, self.seed, self.world_digest), table),
                        where,
                        spec,
                    ),
                    f"world {self.world}: query_data failed",
                )
                _pool.give(self.url, conn)
                return found
            conn, _ = self._started("query_data")
            self._sql(conn, "SAVEPOINT query")
            try:
                found = self._select(conn, sql.Identifier(table), where, spec)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self._lost(exc) from None
            except psycopg.Error as exc:  # the episode goes on as it was
                self._sql(conn, "ROLLBACK TO SAVEPOINT query; RELEASE SAVEPOINT query")
                raise PostgresEnvUsageError(f"predicate: the database refused it ({_first_line(exc)})") from None
            self._sql(conn, "RELEASE SAVEPOINT query")
            return found

    def reward(self) -> Reward:
        """1.0 when the episode's changed records equal the ones the task's gold actions leave (see the module
        docstring); `info` says what was compared and counts refused calls by category."""
        with self._lock:
            self._started("reward")
            mine = self.state().changed
            task = self._task or {}
            gold = PostgresEnvironment(self.world, url=self.url)
            try:
                gold.init(task or None, authenticated_user_id=task.get("customer_user_id"))
                for i, action in enumerate(task.get("gold_actions") or []):
                    if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
                        raise PostgresEnvUsageError(
                            f"task {task.get('id')!r}: gold_actions[{i}]: expected {{name, arguments}}"
                        )
                    if (action.get("requestor") or "assistant") == "assistant":
                        gold.run({"name": action["name"], "arguments": dict(action.get("arguments") or {})})
                expected = gold.state().changed
            finally:
                gold.close()
            refused: dict[str, int] = {}
            for record in self._ledger:
                if record.result.error:
                    refused[record.result.category or "error"] = refused.get(record.result.category or "error", 0) + 1
            return Reward(
                reward=1.0 if mine == expected else 0.0,
                info={
                    "basis": "changed records equal the gold actions' end state",
                    "matches_gold": mine == expected,
                    "refused": refused,
                },
            )

    def say(self, text: str, side: Side = "assistant") -> None:
        """A message of the conversation; kept with the episode (no rule of this environment reads it)."""
        if not isinstance(text, str):
            raise PostgresEnvUsageError(f"text: expected a string, got {type(text).__name__}")
        if side not in SIDES:
            raise PostgresEnvUsageError(f"side {side!r}: expected one of {', '.join(map(repr, SIDES))}")
        with self._lock:
            self._started("say")
            self._said.append((side, text))

    def calls(self) -> list[CallRecord]:
        with self._lock:
            self._started("calls")
            return [record.model_copy(deep=True) for record in self._ledger]

    def close(self) -> None:
        """Roll the episode back (its tables go with it) and return the connection to the pool."""
        with self._lock:
            conn, self._conn, self._schema, self._task = self._conn, None, None, None
            if conn is None:
                return
            try:
                conn.execute("ROLLBACK")
            except psycopg.Error:
                conn.close()  # the server rolls back on its own when the connection goes
                return
            _pool.give(self.url, conn)

    # ---- internals --------------------------------------------------------------------------------------------
    def _started(self, what: str) -> tuple[psycopg.Connection, str]:
        if self._conn is None or self._schema is None:
            raise PostgresEnvUsageError(f"{what}() before init(task): no episode is running")
        return self._conn, self._schema

    def _lost(self, exc: Exception) -> DatabaseUnavailable:
        """The episode is gone with its connection: drop it and say so."""
        conn, self._conn, self._schema = self._conn, None, None
        if conn is not None:
            conn.close()
        return DatabaseUnavailable(
            f"world {self.world}: the database connection was lost mid-episode ({_first_line(exc)});"
            " the episode is gone, start a fresh one"
        )

    def _sql(self, conn: psycopg.Connection, query: Any, params: Any = None) -> psycopg.Cursor:
        try:
            return conn.execute(query, params)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self._lost(exc) from None

    def _execute(self, name: str, arguments: dict[str, Any], *, authorize: bool, setup: bool = False) -> ToolResult:
        """One call inside a savepoint: released when it succeeds, rolled back when it is refused."""
        conn, _ = self._started("run")
        tool = TOOLS.get(name) or (SETUP_FUNCTIONS.get(name) if setup else None)
        if tool is None:
            return ToolResult(
                content=f"Error: unknown tool {name!r}; available tools: {', '.join(TOOLS)}",
                error=True,
                category="invalid_arguments",
            )
        self._sql(conn, "SAVEPOINT call")
        try:
            row = self._sql(conn, "SELECT authenticated_user_id, transferred FROM episode").fetchone()
            assert row is not None
            caller = Caller(authenticated_user_id=row[0], transferred=bool(row[1]), authorize=authorize)
            if tool.kind == "write" and caller.transferred and authorize:
                raise Refusal(
                    f"cannot run {name}: this conversation was transferred to a human agent; no change can be made",
                    "transferred",
                )
            args = tool.validate(arguments)
            with conn.cursor() as cur:
                result = tool.func(cur, caller, **args)
        except Refusal as exc:
            self._sql(conn, "ROLLBACK TO SAVEPOINT call; RELEASE SAVEPOINT call")
            return ToolResult(content=f"Error: {exc}", error=True, category=exc.category)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self._lost(exc) from None
        except psycopg.Error as exc:  # a constraint the tool did not check first: refused all the same
            self._sql(conn, "ROLLBACK TO SAVEPOINT call; RELEASE SAVEPOINT call")
            category = "invalid_arguments" if isinstance(exc, psycopg.DataError) else "precondition"
            return ToolResult(content=f"Error: {name}: {_first_line(exc)}", error=True, category=category)
        except Exception as exc:  # noqa: BLE001 - a bug in a tool must not corrupt the episode
            self._sql(conn, "ROLLBACK TO SAVEPOINT call; RELEASE SAVEPOINT call")
            return ToolResult(content=f"Error: internal error in {name}: {exc}", error=True, category="internal")
        self._sql(conn, "RELEASE SAVEPOINT call")
        return ToolResult(content=content(result))

    def _setup(self, task: dict[str, Any] | None) -> None:
        state = (task or {}).get("initial_state") or {}
        task_id = (task or {}).get("id")
        if not isinstance(state, Mapping):
            raise PostgresTaskSetupError(f"task {task_id!r}: initial_state: expected an object")
        if given := [f for f in _SETUP_STATE_FIELDS if state.get(f)]:
            raise PostgresTaskSetupError(f"task {task_id!r}: initial_state.{given[0]}: not supported")
        actions = state.get("initialization_actions") or []
        if not isinstance(actions, list):
            raise PostgresTaskSetupError(f"task {task_id!r}: initial_state.initialization_actions: expected a list")
        for i, action in enumerate(actions):
            where = f"task {task_id!r}: initial_state.initialization_actions[{i}]"
            if not isinstance(action, Mapping) or not isinstance(action.get("func_name"), str):
                raise PostgresTaskSetupError(f"{where}: expected an object with func_name")
            if action.get("env_type", "assistant") != "assistant":
                raise PostgresTaskSetupError(f"{where}.env_type: {action.get('env_type')!r}: only 'assistant' here")
            arguments = action.get("arguments") or {}
            result = self._execute(action["func_name"], arguments, authorize=False, setup=True)
            if result.error:
                raise PostgresTaskSetupError(f"{where} ({action['func_name']}) failed: {result.content}")

    def _changed(self, conn: psycopg.Connection, schema: str) -> dict[str, dict[str, dict[str, Any]]]:
        parts = [
            sql.SQL("SELECT {name}, to_jsonb(t) FROM (SELECT * FROM {mine} EXCEPT SELECT * FROM {base}) t").format(
                name=sql.Literal(table.name), mine=sql.Identifier(table.name), base=sql.Identifier(schema, table.name)
            )
            for table in TABLES
        ]
        changed: dict[str, dict[str, dict[str, Any]]] = {}
        for name, record in self._sql(conn, sql.SQL(" UNION ALL ").join(parts)).fetchall():
            spec = TABLE_BY_NAME[name]
            changed.setdefault(name, {})[str(record[spec.key])] = {c: record[c] for c in spec.column_names}
        return {name: dict(sorted(records.items())) for name, records in sorted(changed.items())}

    def _select(self, conn: psycopg.Connection, source: sql.Identifier, where: Any, spec: Table) -> dict[str, dict]:
        """key → row (its fields in the table's column order) of the rows `where` holds for, in key order."""
        query = sql.SQL("SELECT to_jsonb(t) FROM {} t WHERE {} ORDER BY t.{}").format(
            source, where, sql.Identifier(spec.key)
        )
        return {str(r[0][spec.key]): {c: r[0][c] for c in spec.column_names} for r in conn.execute(query).fetchall()}

    def _task_json(self, task: Mapping[str, Any] | BaseModel | None) -> dict[str, Any] | None:
        if task is None:
            return None
        if isinstance(task, BaseModel):
            task = task.model_dump(mode="json")
        if not isinstance(task, Mapping):
            raise PostgresEnvUsageError(f"task: expected a task's JSON object or None, got {type(task).__name__}")
        if task.get("world", self.world) != self.world:
            raise PostgresEnvUsageError(
                f"task {task.get('id')!r}: field world is {task.get('world')!r}, but this environment serves"
                f" {self.world!r}"
            )
        return dict(task)

    @staticmethod
    def _call(call: Mapping[str, Any] | BaseModel) -> tuple[str, dict[str, Any]]:
        if isinstance(call, BaseModel):
            call = call.model_dump(mode="json")
        if not isinstance(call, Mapping):
            raise PostgresEnvUsageError(f"call: expected an object {{name, arguments}}, got {type(call).__name__}")
        if unknown := sorted(map(str, set(call) - set(CALL_FIELDS) - {"raw_arguments"})):
            raise PostgresEnvUsageError(
                f"call: unknown field {unknown[0]!r}; a call's fields are {', '.join(CALL_FIELDS)}"
            )
        name, arguments = call.get("name"), call.get("arguments")
        if not isinstance(name, str) or not name:
            raise PostgresEnvUsageError(f"call: field name: expected a tool name, got {name!r}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
            raise PostgresEnvUsageError(f"call {name!r}: field arguments: expected an object with string keys")
        return name, dict(arguments)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _shown_url(url: str) -> str:
    """The URL without a password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "(unparseable URL)"
    return f"{info.get('host', '')}:{info.get('port', '')}/{info.get('dbname', '')}"
