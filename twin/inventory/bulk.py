"""Set-based writes for whole-cluster builds and deletes: no model instances, no per-row queries.

``reserve_ids`` reserves a block of primary keys so that rows can reference each other by id before they are
written; ``BulkLoad`` writes a build's tables from column arrays (COPY on PostgreSQL, executemany elsewhere) and
checks their foreign keys on the arrays; ``delete_where`` deletes with one statement per table. All run inside the
caller's transaction.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from django.db import DatabaseError, IntegrityError, connection, transaction

BATCH = 20_000


def reserve_ids(model, n: int) -> int:
    """Reserve ``n`` consecutive primary keys of ``model``; return the first. The caller inserts them explicitly.

    Keys are never reused, even after deletes (a stored run names the inventory ids it ran on): PostgreSQL takes
    them from the identity sequence, SQLite from ``sqlite_sequence`` (its AUTOINCREMENT high-water mark). The
    transaction holds the table's write lock (PostgreSQL: EXCLUSIVE, readers still read; SQLite: IMMEDIATE), so
    no other writer can take keys in between.
    """
    table = model._meta.db_table
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute(f"LOCK TABLE {connection.ops.quote_name(table)} IN EXCLUSIVE MODE")
            cur.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [table])
            first = cur.fetchone()[0]
            if n > 1:
                cur.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [table, first + n - 1])
            return first
        cur.execute(f"SELECT MAX(id) FROM {connection.ops.quote_name(table)}")
        highest = cur.fetchone()[0] or 0
        cur.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        row = cur.fetchone()
        return max(highest, row[0] if row else 0) + 1


def foreign_key_triggers_off() -> bool:
    """Switch PostgreSQL's per-row foreign-key checks off until the end of the transaction, where this role may;
    return whether they are off (never on SQLite).

    Django declares foreign keys ``DEFERRABLE INITIALLY DEFERRED``, so PostgreSQL queues one trigger call per key
    per written or deleted row and runs them at COMMIT, one single-row lookup each: for a 600k-GPU cluster (7
    million rows, 25 million keys) the COMMIT alone took minutes. ``session_replication_role = replica`` (what
    ``pg_restore --disable-triggers`` uses) skips them; it needs a superuser (the compose set-up's ``twin`` role is
    one) or ``GRANT SET ON PARAMETER session_replication_role`` (PostgreSQL 15). ``SET LOCAL``: it ends with the
    transaction. The caller then owns the check the triggers made: :class:`BulkLoad` makes it on the arrays.
    """
    if connection.vendor != "postgresql":
        return False
    try:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SET LOCAL session_replication_role = replica")
    except DatabaseError:
        return False
    return True


class BulkLoad:
    """Whole tables written from column arrays inside the caller's transaction, their foreign keys checked first.

    Rows name each other by ids reserved up front; a relation column given as an integer array holds -1 for NULL.
    Before a table is written, every key in its relation columns must name a row this load wrote (its reserved
    range) or one of ``parents``' ids (rows made, or locked, by the same transaction: no other transaction can
    remove them before it commits), else ``IntegrityError`` naming the column: the check PostgreSQL's triggers
    would make row by row at COMMIT, made on the arrays in numpy (``foreign_key_triggers_off``).
    """

    def __init__(self, parents: dict[type, Iterable[int]] | None = None):
        self.parents = {model: np.unique(np.fromiter(ids, dtype=np.int64)) for model, ids in (parents or {}).items()}
        self.ranges: dict[type, list[tuple[int, int]]] = {}
        self.triggers_off = foreign_key_triggers_off()

    def add_parents(self, model, ids: Iterable[int]) -> None:
        """Declare rows of ``model`` made otherwise in this transaction (through the ORM) as referable."""
        known = self.parents.get(model, np.empty(0, dtype=np.int64))
        self.parents[model] = np.union1d(known, np.fromiter(ids, dtype=np.int64))

    def write(self, model, n: int, columns: dict, progress: Callable[[int], None] | None = None) -> int:
        """Insert ``n`` rows of ``model`` with ids base..base+n-1; return base (the id of row 0)."""
        base = reserve_ids(model, n)
        self.ranges.setdefault(model, []).append((base, n))
        columns = {"id": np.arange(base, base + n, dtype=np.int64), **columns}
        self._check_references(model, columns)
        insert_columns(model, columns, progress)
        return base

    def _check_references(self, model, columns: dict) -> None:
        relations = {f.attname: f for f in model._meta.concrete_fields if f.is_relation}
        relations |= {f.name: f for f in relations.values()}
        for name, values in columns.items():
            field = relations.get(name)
            if field is None:
                continue
            keys = _keys(values)
            keys = keys[keys >= 0]
            ok = np.isin(keys, self.parents.get(field.related_model, np.empty(0, dtype=np.int64)))
            for base, n in self.ranges.get(field.related_model, ()):
                ok |= (keys >= base) & (keys < base + n)
            if not ok.all():
                bad = int(keys[~ok][0])
                raise IntegrityError(f"{model.__name__}.{field.name}: {int((~ok).sum())} row(s) name a "
                                     f"{field.related_model.__name__} that this build did not write (id {bad})")


def _keys(values) -> np.ndarray:
    """A relation column as int64 keys, NULL (None) as -1."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    return np.array([-1 if v is None else v for v in values], dtype=np.int64)


def _batch_values(field, values, start: int, stop: int) -> list:
    """Rows ``start:stop`` of one column as Python values, converted per batch (a whole column of Python ints for
    3.5 million ports would hold hundreds of MB); in a relation column given as an integer array, -1 is NULL."""
    chunk = values[start:stop]
    if isinstance(chunk, np.ndarray):
        out = chunk.tolist()
        if field.is_relation and chunk.dtype.kind == "i" and (chunk < 0).any():
            out = [None if v < 0 else v for v in out]
        return out
    return list(chunk)


def insert_columns(model, columns: dict[str, Sequence], progress: Callable[[int], None] | None = None) -> int:
    """Insert rows given as equal-length columns (``{"name": [...], "host_id": array, ...}``); return the count.

    Values must already be what the database stores (ids for foreign keys, strings for choices); numpy arrays are
    converted with ``tolist()`` one batch at a time, not per element; in a relation column given as an integer
    array, -1 stands for NULL.
    """
    names = list(columns)
    cols = list(columns.values())
    n = len(cols[0]) if cols else 0
    if any(len(c) != n for c in cols):
        raise ValueError(f"{model.__name__}: columns of unequal length {[len(c) for c in cols]}")
    if not n:
        return 0
    by_name = {f.name: f for f in model._meta.concrete_fields} | {f.attname: f for f in model._meta.concrete_fields}
    fields = [by_name[name] for name in names]
    table = connection.ops.quote_name(model._meta.db_table)
    column_sql = ", ".join(connection.ops.quote_name(f.column) for f in fields)

    def rows(start):
        return zip(*(_batch_values(f, c, start, start + BATCH) for f, c in zip(fields, cols)))

    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            raw = cur.cursor  # the psycopg cursor behind Django's wrapper
            with raw.copy(f"COPY {table} ({column_sql}) FROM STDIN") as copy:
                for start in range(0, n, BATCH):
                    for row in rows(start):
                        copy.write_row(row)
                    if progress:
                        progress(min(BATCH, n - start))
        else:
            sql = f"INSERT INTO {table} ({column_sql}) VALUES ({', '.join(['%s'] * len(names))})"
            for start in range(0, n, BATCH):
                cur.executemany(sql, list(rows(start)))
                if progress:
                    progress(min(BATCH, n - start))
    return n


def referenced_from_outside(models, cluster_id: int) -> str | None:
    """Before a cluster's rows of ``models`` are deleted with the foreign-key triggers off: the first key, in any
    table, that names one of those rows from outside the cluster ("<table>.<column> -> <table>"), else None. One
    join per foreign key of the project that points at ``models``: what the triggers would have found at COMMIT,
    set-based. Rows of the cluster itself are deleted with it; other tables (runs, jobs) name the cluster only."""
    from django.apps import apps

    targets = set(models)
    q = connection.ops.quote_name
    with connection.cursor() as cur:
        for model in apps.get_models():
            own = any(f.name == "cluster" for f in model._meta.concrete_fields) and model in targets
            for f in model._meta.concrete_fields:
                if not f.is_relation or f.related_model not in targets or not f.db_constraint:
                    continue
                if own and f.name == "cluster":
                    continue  # a row of the cluster, deleted with it
                target = f.related_model
                outside = f"m.{q('cluster_id')} <> %s" if own else "TRUE"
                where = "t.id = %s" if target._meta.db_table == "inventory_cluster" else "t.cluster_id = %s"
                cur.execute(f"SELECT 1 FROM {q(model._meta.db_table)} m JOIN {q(target._meta.db_table)} t "
                            f"ON t.id = m.{q(f.column)} WHERE {where} AND {outside} LIMIT 1",
                            [cluster_id] + ([cluster_id] if own else []))
                if cur.fetchone():
                    return f"{model._meta.db_table}.{f.column} -> {target._meta.db_table}"
    return None


def delete_where(model, column: str, value) -> int:
    """``DELETE FROM model WHERE column = value`` in one statement; return the row count."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {table} WHERE {connection.ops.quote_name(column)} = %s", [value])
        return cur.rowcount


def analyze(models) -> None:
    """Refresh the query planner's statistics after a bulk load, so that it picks the indexes (SQLite has none
    until told; PostgreSQL's autovacuum would get there minutes later). On PostgreSQL outside a transaction, VACUUM
    too: it marks the freshly written pages all-visible, without which no index-only scan is one (a list's count or
    a deep page's first id would read the table's rows instead of one index)."""
    command = "VACUUM (ANALYZE)" if connection.vendor == "postgresql" and not connection.in_atomic_block else "ANALYZE"
    with connection.cursor() as cur:
        for model in models:
            cur.execute(f"{command} {connection.ops.quote_name(model._meta.db_table)}")
