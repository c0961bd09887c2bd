"""Set-based writes for whole-cluster builds and deletes: no model instances, no per-row queries.

``IdRange`` reserves a block of primary keys so that rows can reference each other by id before they are
written; ``insert_columns`` writes column arrays with COPY on PostgreSQL and executemany elsewhere;
``delete_where`` deletes with one statement per table. All run inside the caller's transaction.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import connection

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


def insert_columns(model, columns: dict[str, Sequence], progress: Callable[[int], None] | None = None) -> int:
    """Insert rows given as equal-length columns (``{"name": [...], "host_id": array, ...}``); return the count.

    Values must already be what the database stores (ids for foreign keys, strings for choices); numpy arrays are
    converted with ``tolist()`` once, not per element.
    """
    names = list(columns)
    cols = [c.tolist() if hasattr(c, "tolist") else list(c) for c in columns.values()]
    n = len(cols[0]) if cols else 0
    if any(len(c) != n for c in cols):
        raise ValueError(f"{model.__name__}: columns of unequal length {[len(c) for c in cols]}")
    if not n:
        return 0
    fields = {f.name: f.column for f in model._meta.concrete_fields} | {f.attname: f.column
                                                                         for f in model._meta.concrete_fields}
    table = connection.ops.quote_name(model._meta.db_table)
    column_sql = ", ".join(connection.ops.quote_name(fields[name]) for name in names)
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            raw = cur.cursor  # the psycopg cursor behind Django's wrapper
            with raw.copy(f"COPY {table} ({column_sql}) FROM STDIN") as copy:
                for start in range(0, n, BATCH):
                    for row in zip(*(c[start:start + BATCH] for c in cols)):
                        copy.write_row(row)
                    if progress:
                        progress(min(BATCH, n - start))
        else:
            sql = f"INSERT INTO {table} ({column_sql}) VALUES ({', '.join(['%s'] * len(names))})"
            for start in range(0, n, BATCH):
                cur.executemany(sql, list(zip(*(c[start:start + BATCH] for c in cols))))
                if progress:
                    progress(min(BATCH, n - start))
    return n


def delete_where(model, column: str, value) -> int:
    """``DELETE FROM model WHERE column = value`` in one statement; return the row count."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {table} WHERE {connection.ops.quote_name(column)} = %s", [value])
        return cur.rowcount


def analyze(models) -> None:
    """Refresh the query planner's statistics after a bulk load, so that it picks the indexes (SQLite has none
    until told; PostgreSQL's autovacuum would get there minutes later)."""
    with connection.cursor() as cur:
        for model in models:
            cur.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
