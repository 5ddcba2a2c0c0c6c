#!/usr/bin/env python3
"""Runs MySQL functions on Atoll and on MariaDB over the same rows and prints where they differ.

Usage: tests/differential/functions.py [--atoll PORT] [--mariadb PORT] [--slt FILE]
                                      [FILE.exprs ...]

Both servers are reached as root without a password on 127.0.0.1 (defaults: Atoll 4000,
MariaDB 3306) with the `mysql` client. Each line of an .exprs file is one expression over
the columns of table lib (i INT, b BIGINT, d DECIMAL(10,3), f DOUBLE, s VARCHAR(40),
dt DATETIME, dd DATE; a row of NULLs among them); `SELECT id, <expr> FROM lib ORDER BY id`
runs on both and the outputs are compared line by line. With no file, every .exprs file
next to this script. Exits 1 if any expression differs. `--slt FILE` writes the answers of
the ones that agree as sqllogictest records (tests/slt/library.slt is made so).
"""
import argparse
import pathlib
import subprocess
import sys

ROWS = [
    (1, 0, 0, "0.000", "0", "''", "'2024-02-29 13:05:09'", "'2024-02-29'"),
    (2, 7, -9000000000, "1.250", "2.5", "'hello'", "'1999-12-31 23:59:59'", "'1999-12-31'"),
    (3, -3, 12345, "-2.505", "-0.5", "'Ünïcode straße'", "'2000-01-01 00:00:00'", "'2000-01-01'"),
    (4, 1250, 1, "999.999", "1e20", "'12.7abc'", "'2021-07-04 08:09:10'", "'2021-07-04'"),
    (5, "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"),
    (6, -1, 99, "0.001", "3.14159", "'a,b,c'", "'2020-03-01 00:00:00'", "'2020-03-01'"),
    (7, 100, -1, "-0.500", "-2.5", "'  pad  '", "'1970-01-01 00:00:01'", "'1970-01-02'"),
]


def mysql(port, sql, db="differential"):
    p = subprocess.run(
        ["mysql", "-h", "127.0.0.1", "-P", str(port), "-u", "root", "--skip-ssl",
         "--batch", "--skip-column-names", db, "-e", sql],
        capture_output=True, text=True)
    if p.returncode:
        # The error code only: the two servers word their messages differently.
        return "ERROR " + p.stderr.split("ERROR ", 1)[-1].split(" ", 1)[0]
    return p.stdout


def setup(port):
    mysql(port, "DROP DATABASE IF EXISTS differential; "
                "CREATE DATABASE differential CHARACTER SET utf8mb4", db="")
    mysql(port, "CREATE TABLE lib (id INT PRIMARY KEY, i INT, b BIGINT, d DECIMAL(10,3), "
                "f DOUBLE, s VARCHAR(40), dt DATETIME, dd DATE)")
    values = ",".join("(%s)" % ",".join(str(v) for v in r) for r in ROWS)
    out = mysql(port, "INSERT INTO lib VALUES " + values)
    if out.startswith("ERROR"):
        sys.exit(f"port {port}: the rows could not be written: {out}")


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--atoll", type=int, default=4000)
    args.add_argument("--mariadb", type=int, default=3306)
    args.add_argument("--slt", help="write the agreeing answers here")
    args.add_argument("files", nargs="*")
    a = args.parse_args()
    here = pathlib.Path(__file__).parent
    files = a.files or sorted(str(p) for p in here.glob("*.exprs"))
    setup(a.mariadb)
    setup(a.atoll)
    total = differ = 0
    records = []
    for f in files:
        for e in (l.strip() for l in open(f)):
            if not e or e.startswith("#"):
                continue
            total += 1
            q = f"SELECT id, {e} FROM lib ORDER BY id"
            m, o = mysql(a.mariadb, q), mysql(a.atoll, q)
            if m != o:
                differ += 1
                print(f"=== {e}")
                for x, y in zip(m.splitlines(), o.splitlines()):
                    if x != y:
                        print(f"    mariadb: {x}  |  atoll: {y}")
            elif not o.startswith("ERROR"):
                if any(l != l.rstrip() for l in o.splitlines()):
                    # Trailing spaces do not survive the slt format: the value in brackets.
                    q = f"SELECT id, CONCAT('[', {e}, ']') FROM lib ORDER BY id"
                    o = mysql(a.atoll, q)
                rows = [" ".join(v or "(empty)" for v in l.split("\t")) for l in o.splitlines()]
                records.append("\n".join(["query IT", q, "----", *rows]))
    if a.slt:
        values = ",".join("(%s)" % ",".join(str(v) for v in r) for r in ROWS)
        head = [
            "# MySQL's function library over rows of each kind of value: the answers of the",
            "# expressions of tests/differential/*.exprs that agree with MariaDB 10.11's, written by",
            "# tests/differential/functions.py --slt.",
            "",
            "statement ok",
            "CREATE TABLE lib (id INT PRIMARY KEY, i INT, b BIGINT, d DECIMAL(10,3), f DOUBLE, "
            "s VARCHAR(40), dt DATETIME, dd DATE)",
            "",
            "statement ok",
            "INSERT INTO lib VALUES " + values,
        ]
        pathlib.Path(a.slt).write_text("\n\n".join(["\n".join(head), *records]) + "\n")
    print(f"{total - differ} of {total} agree")
    sys.exit(1 if differ else 0)


main()
