#!/usr/bin/env python3
"""Runs what a Trackhouse server sent to an old ClickHouse again on a current
release, on the same rows, and compares the answers.

    clickhouse_current.py URL DATABASE

URL is the HTTP interface of the old server (Debian's 18.16), started with
every query logged (`system.query_log`); the current release is chDB
(ClickHouse embedded, from PyPI; `.ci/run` installs it). In order:

1. the statements Trackhouse sent are read from the log;
2. its CREATE statements run on chDB: the schema as Trackhouse creates it;
3. the rows of every table of DATABASE are copied over in RowBinary, with
   the columns of Trackhouse's INSERTs (the bytes of the old server, which
   took Trackhouse's, read by the current one);
4. both merge (OPTIMIZE ... FINAL), so that ReplacingMergeTree has folded
   the same copies on both;
5. every SELECT runs on both, as TabSeparatedWithNamesAndTypes: the column
   types and the rows (sorted: the reads are unordered, Trackhouse sorts
   them) must be the same; the names may not be (an unaliased expression is
   named by its text, which releases print differently; RowBinary, which
   Trackhouse reads, carries no names);
6. every other statement (ALTER ... DELETE of retention, the column checks)
   runs on chDB and must be accepted.

Prints a JSON summary; exits 1 if anything differs or fails.
"""

import json
import os
import re
import sys
import tempfile
import urllib.request

from chdb import session


def main() -> int:
    url, database = sys.argv[1], sys.argv[2]

    def old(sql: str) -> str:
        request = urllib.request.Request(url, data=sql.encode())
        with urllib.request.urlopen(request) as answer:
            return answer.read().decode()

    old("SYSTEM FLUSH LOGS")
    # type 2: finished. The server is the test's: everything but this
    # script's own statements is Trackhouse's.
    logged = old(
        "SELECT query FROM system.query_log WHERE type = 2 "
        "AND positionCaseInsensitive(query, 'system.') = 0 "
        "AND NOT startsWith(query, 'SYSTEM') "
        "ORDER BY event_time, query_start_time FORMAT JSONEachRow"
    )
    statements = []
    for line in logged.splitlines():
        query = json.loads(line)["query"].strip()
        if query not in statements:
            statements.append(query)

    summary = {
        "old": old("SELECT version()").strip(),
        "created": 0,
        "tables": 0,
        "inserts": 0,
        "compared": 0,
        "executed": 0,
        "differences": [],
    }
    state = tempfile.mkdtemp(prefix="chdb-")
    new = session.Session(state)
    summary["new"] = new.query("SELECT version()", "TSV").data().strip()

    def differ(statement: str, what: str) -> None:
        summary["differences"].append({"statement": statement, "difference": what})

    # The log's times are seconds: databases before their tables.
    creates = [s for s in statements if s.upper().startswith("CREATE")]
    creates.sort(key=lambda s: not s.upper().startswith("CREATE DATABASE"))
    for statement in creates:
        try:
            new.query(statement)
            summary["created"] += 1
        except Exception as error:  # noqa: BLE001 - reported, not raised
            differ(statement, f"refused: {error}")

    # The columns of Trackhouse's INSERTs, by table: the rows are copied in
    # RowBinary with those columns, as Trackhouse sends them.
    inserted = {}
    insert = re.compile(r"INSERT INTO\s+([\w.`]+)\s*\((.*)\)\s*FORMAT RowBinary\s*$", re.S)
    for statement in statements:
        match = insert.match(statement)
        if match:
            table = match.group(1).replace("`", "").split(".")[-1]
            inserted[table] = [c.strip().strip("`") for c in match.group(2).split(",")]

    def old_bytes(sql: str) -> bytes:
        request = urllib.request.Request(url, data=sql.encode())
        with urllib.request.urlopen(request) as answer:
            return answer.read()

    tables = old(f"SHOW TABLES FROM `{database}`").split()
    for table in tables:
        if table not in inserted:
            differ(f"the rows of {table}", "Trackhouse sent no RowBinary INSERT")
            continue
        described = old(f"DESCRIBE TABLE `{database}`.`{table}` FORMAT TSV")
        types = dict(line.split("\t")[:2] for line in described.splitlines())
        columns = inserted[table]
        names = ", ".join(f"`{name}`" for name in columns)
        structure = ", ".join(f"`{name}` {types[name]}" for name in columns)
        rows = old_bytes(f"SELECT {names} FROM `{database}`.`{table}` FORMAT RowBinary")
        path = os.path.join(state, f"{table}.bin")
        with open(path, "wb") as file:
            file.write(rows)
        try:
            new.query(
                f"INSERT INTO `{database}`.`{table}` ({names}) "
                f"SELECT * FROM file('{path}', 'RowBinary', '{structure}')"
            )
        except Exception as error:  # noqa: BLE001 - reported, not raised
            differ(f"the rows of {table}", f"not loaded: {error}")
            continue
        for engine in (old, new.query):
            engine(f"OPTIMIZE TABLE `{database}`.`{table}` FINAL")
        counts = [
            old(f"SELECT count() FROM `{database}`.`{table}`").strip(),
            new.query(f"SELECT count() FROM `{database}`.`{table}`", "TSV").data().strip(),
        ]
        if counts[0] != counts[1]:
            differ(f"the rows of {table}", f"{counts[0]} on the old, {counts[1]} on the new")
        summary["tables"] += 1

    format_clause = re.compile(r"\s+FORMAT\s+\w+\s*$", re.IGNORECASE)
    for statement in statements:
        verb = statement.split(None, 1)[0].upper()
        if verb == "CREATE":
            continue
        if verb == "INSERT":
            summary["inserts"] += 1
            continue
        if verb != "SELECT" or " LIMIT 0" in statement:
            try:
                new.query(statement)
                summary["executed"] += 1
            except Exception as error:  # noqa: BLE001 - reported, not raised
                differ(statement, f"refused: {error}")
            continue
        query = format_clause.sub("", statement) + " FORMAT TabSeparatedWithNamesAndTypes"
        try:
            answers = [old(query), new.query(query).bytes().decode()]
        except Exception as error:  # noqa: BLE001 - reported, not raised
            differ(statement, f"failed: {error}")
            continue
        summary["compared"] += 1
        (old_types, old_rows), (new_types, new_rows) = (
            (lines[1], sorted(lines[2:]))
            for lines in (answer.split("\n")[:-1] for answer in answers)
        )
        if old_types != new_types:
            differ(statement, f"types {old_types!r} on the old, {new_types!r} on the new")
        elif old_rows != new_rows:
            differ(statement, f"rows {old_rows[:5]!r} on the old, {new_rows[:5]!r} on the new")

    print(json.dumps(summary, indent=1))
    return 1 if summary["differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
