#!/usr/bin/env python3
"""Random queries from a seed, checked two ways: against MariaDB, and by SQLancer's oracles.

Usage: random_queries.py [--atoll PORT] [--mariadb PORT] [--seed N] [--queries N] [--show N]

Both servers are reached as root without a password on 127.0.0.1 (defaults: Atoll 4000,
MariaDB 3306), with PyMySQL (the venv scripts/install-deps makes). A seed makes the same
tables, rows and queries every time; it is printed first, so a run can be repeated.

- Differential (with --mariadb): each query runs on both; the rows are compared as a
  multiset, or as a list when the query orders by a unique key. Every query falls in one
  class: match, mismatch, atoll error (MariaDB answers, Atoll fails), unsupported (Atoll
  refuses it as not supported, 1235), mariadb error (only MariaDB fails), both error.
- Oracles (on Atoll alone: for every query without --mariadb, every tenth with it): TLP splits a query by a predicate p into WHERE p,
  WHERE NOT p and WHERE p IS NULL, whose union must give the query's rows; NoREC counts
  the rows WHERE p and compares with SUM over the rows of CASE WHEN p, which no index or
  pushdown can shortcut. A disagreement is a bug in Atoll whatever MariaDB says.

What the generator writes, it writes in the SQL both servers share: the differences known
and intended (tests/differential/KNOWN.md) are left out. Exits 1 on any mismatch or oracle
failure.
"""
import argparse
import random
import sys
from decimal import Decimal

import pymysql

INT_VALUES = [-7, -1, 0, 1, 2, 3, 5, 8, 13, 100, None]
BIG_VALUES = [-9000000000, -2, 0, 1, 42, 4294967296, 9000000000, None]
DEC_VALUES = ["-12.500", "-0.001", "0.000", "0.250", "1.000", "2.500", "99.999", None]
DBL_VALUES = ["-2.5", "-0.25", "0", "0.5", "1", "3.75", "1e10", None]
STR_VALUES = ["", "a", "b", "ab", "abc", "B", "hello world", "10", "2.5", "x_y", "a%b", "é", None]
DATE_VALUES = ["1999-12-31", "2000-01-01", "2000-02-29", "2024-02-29", "2024-12-31", None]
DT_VALUES = ["2000-01-01 00:00:00", "2024-02-29 13:05:09", "1999-12-31 23:59:59",
             "2021-07-04 08:09:10", None]
# Text of a utf8mb4_general_ci column: case, accents and ß that it ignores. (No trailing
# spaces: met with a _bin operand they compare by bytes here, PAD SPACE in MariaDB, KNOWN.md.)
CI_VALUES = ["abc", "ABC", "Abc", "é", "E", "e", "ß", "s", "ss", "x_y", "", "b", None]

# (column, kind) of both tables.
COLUMNS = [("a", "int"), ("b", "int"), ("c", "dec"), ("d", "dbl"), ("e", "str"), ("f", "date"),
           ("g", "datetime"), ("h", "ci")]
DDL = ("CREATE TABLE {name} (id INT PRIMARY KEY, a INT, b BIGINT, c DECIMAL(12,3), d DOUBLE, "
       "e VARCHAR(20), f DATE, g DATETIME, h VARCHAR(20) COLLATE utf8mb4_general_ci){suffix}")


def literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    return "'" + v.replace("'", "''") + "'"


class Gen:
    def __init__(self, rng):
        self.r = rng
        # While set, no _ci text: MIN and MAX of values its collation calls equal may give
        # any of them (MySQL's manual), so Atoll and MariaDB may rightly differ.
        self.no_ci = False

    def pick(self, xs):
        return self.r.choice(xs)

    def column(self, tables, kind=None):
        cols = [(t, c) for t in tables for c, k in COLUMNS
                if (kind in (None, k) or (kind == "num" and k in ("int", "dec", "dbl"))
                    or (kind == "str" and k == "ci"))
                and not (self.no_ci and k == "ci")]
        t, c = self.pick(cols)
        return f"{t}.{c}"

    def num(self, tables, depth=0):
        r = self.r.random()
        if depth >= 2 or r < 0.35:
            return self.column(tables, "num")
        if r < 0.5:
            return self.pick(["0", "1", "-3", "2.5", "7", "0.125", "100"])
        d = depth + 1
        x = lambda: self.num(tables, d)
        s = lambda: self.string(tables, d)
        c = lambda: self.cond(tables, d)
        day = lambda: self.date(tables)
        ops = [lambda: f"({x()} + {x()})", lambda: f"({x()} - {x()})",
               lambda: f"({x()} * {x()})", lambda: f"({x()} / {x()})",
               lambda: f"({x()} DIV {x()})", lambda: f"({x()} % {x()})",
               lambda: f"ABS({x()})", lambda: f"ROUND({x()})", lambda: f"ROUND({x()}, 1)",
               lambda: f"FLOOR({x()})", lambda: f"CEIL({x()})",
               lambda: f"GREATEST({x()}, {x()})", lambda: f"LEAST({x()}, {x()})",
               lambda: f"IFNULL({x()}, {x()})", lambda: f"COALESCE({x()}, {x()}, 0)",
               lambda: f"NULLIF({x()}, {x()})", lambda: f"IF({c()}, {x()}, {x()})",
               lambda: f"-{x()}", lambda: f"MOD({x()}, {x()})", lambda: f"TRUNCATE({x()}, 1)",
               lambda: f"SIGN({x()})", lambda: f"CASE WHEN {c()} THEN {x()} ELSE {x()} END",
               lambda: f"LENGTH({s()})", lambda: f"CHAR_LENGTH({s()})",
               lambda: f"YEAR({day()})", lambda: f"MONTH({day()})",
               lambda: f"DATEDIFF({day()}, {day()})", lambda: f"LOCATE('b', {s()})"]
        return self.pick(ops)()

    def string(self, tables, depth=0):
        r = self.r.random()
        if depth >= 2 or r < 0.4:
            return self.column(tables, "str")
        if r < 0.5:
            return literal(self.pick([v for v in STR_VALUES if v is not None]))
        d = depth + 1
        s = lambda: self.string(tables, d)
        ops = [lambda: f"CONCAT({s()}, {s()})", lambda: f"UPPER({s()})",
               lambda: f"LOWER({s()})", lambda: f"LEFT({s()}, 2)", lambda: f"RIGHT({s()}, 2)",
               lambda: f"SUBSTRING({s()}, 2)", lambda: f"SUBSTRING({s()}, 1, 2)",
               lambda: f"REPLACE({s()}, 'a', 'z')", lambda: f"TRIM({s()})",
               lambda: f"LPAD({s()}, 5, '*')", lambda: f"REVERSE({s()})",
               lambda: f"REPEAT({s()}, 2)", lambda: f"CONCAT_WS('-', {s()}, {s()})",
               lambda: f"IFNULL({s()}, 'none')", lambda: f"HEX({s()})",
               lambda: f"DATE_FORMAT({self.date(tables)}, '%Y/%m')"]
        return self.pick(ops)()

    def date(self, tables):
        r = self.r.random()
        if r < 0.6:
            return self.column(tables, self.pick(["date", "datetime"]))
        if r < 0.75:
            return literal(self.pick([v for v in DATE_VALUES if v is not None]))
        d = self.column(tables, self.pick(["date", "datetime"]))
        return self.pick([f"DATE_ADD({d}, INTERVAL {self.pick([1, -1, 30])} DAY)",
                          f"DATE_SUB({d}, INTERVAL 1 MONTH)", f"DATE({d})",
                          f"LAST_DAY({d})"])

    def cond(self, tables, depth=0):
        r = self.r.random()
        if depth < 2 and r < 0.2:
            x, y = self.cond(tables, depth + 1), self.cond(tables, depth + 1)
            return self.pick([f"({x} AND {y})", f"({x} OR {y})", f"(NOT {x})"])
        kind = self.pick(["num", "num", "str", "date"])
        side = {"num": lambda: self.num(tables, depth + 1),
                "str": lambda: self.string(tables, depth + 1),
                "date": lambda: self.date(tables)}[kind]
        x = side()
        op = self.pick(["=", "<>", "<", "<=", ">", ">=", "<=>"])
        forms = [lambda: f"{x} {op} {side()}", lambda: f"{x} {op} {side()}",
                 lambda: f"{x} IS NULL", lambda: f"{x} IS NOT NULL",
                 lambda: f"{x} BETWEEN {side()} AND {side()}",
                 lambda: f"{x} IN ({side()}, {side()}, NULL)"]
        if kind == "str":
            pattern = self.pick(["'a%'", "'%b'", "'_'", "'%'", "'a_c'", "'%x\\_y%'", "''"])
            forms += [lambda: f"{x} LIKE {pattern}", lambda: f"{x} NOT LIKE {pattern}"]
        return self.pick(forms)()

    def without_ci(self, make, tables):
        self.no_ci = True
        try:
            return make(tables)
        finally:
            self.no_ci = False

    def expr(self, tables):
        return self.pick([self.num, self.num, self.string, self.date])(tables)

    def query(self):
        """A query and whether its order is determined (ORDER BY a unique key)."""
        shape = self.pick(["plain", "plain", "agg", "join", "subquery", "union", "window",
                           "distinct"])
        t1, both = ["t1"], ["t1", "t2"]
        if shape == "plain":
            exprs = ", ".join(self.expr(t1) for _ in range(self.r.randint(1, 3)))
            where = f" WHERE {self.cond(t1)}" if self.r.random() < 0.8 else ""
            limit = f" LIMIT {self.r.randint(1, 10)}" if self.r.random() < 0.2 else ""
            return f"SELECT t1.id, {exprs} FROM t1{where} ORDER BY t1.id{limit}", True
        if shape == "agg":
            group = self.pick(["t1.a", "t1.e", "t1.f", "t1.a % 3", "LEFT(t1.e, 1)", "t1.h"])
            aggs = ", ".join(self.pick([
                "COUNT(*)", f"COUNT({self.expr(t1)})", f"SUM({self.num(t1)})",
                f"MIN({self.without_ci(self.expr, t1)})",
                f"MAX({self.without_ci(self.expr, t1)})", f"AVG({self.num(t1)})",
                f"COUNT(DISTINCT {self.expr(t1)})", f"SUM(DISTINCT {self.num(t1)})",
                f"GROUP_CONCAT({self.string(t1)} ORDER BY t1.id)"])
                for _ in range(self.r.randint(1, 3)))
            where = f" WHERE {self.cond(t1)}" if self.r.random() < 0.5 else ""
            having = f" HAVING COUNT(*) > {self.r.randint(0, 2)}" if self.r.random() < 0.3 else ""
            # A group of the _ci column shows one of its values, any one: not compared.
            shown = "'h'" if group == "t1.h" else group
            return f"SELECT {shown}, {aggs} FROM t1{where} GROUP BY {group}{having}", False
        if shape == "join":
            kind = self.pick(["JOIN", "LEFT JOIN"])
            on = self.pick(["t1.a = t2.a", "t1.e = t2.e", "t1.f = t2.f", "t1.a = t2.b",
                            "t1.h = t2.h"])
            where = f" WHERE {self.cond(both)}" if self.r.random() < 0.6 else ""
            return (f"SELECT t1.id, t2.id, {self.expr(both)} FROM t1 {kind} t2 ON {on}{where} "
                    f"ORDER BY t1.id, t2.id"), True
        if shape == "subquery":
            inner = self.cond(["t2"])
            form = self.pick([f"t1.a IN (SELECT t2.a FROM t2 WHERE {inner})",
                              f"t1.a NOT IN (SELECT t2.a FROM t2 WHERE t2.a IS NOT NULL AND {inner})",
                              f"EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a AND {inner})",
                              f"t1.a > (SELECT MIN(t2.a) FROM t2 WHERE {inner})"])
            return f"SELECT t1.id, {self.expr(t1)} FROM t1 WHERE {form} ORDER BY t1.id", True
        if shape == "union":
            op = self.pick(["UNION", "UNION ALL"])
            x = f"SELECT t1.a, t1.e FROM t1 WHERE {self.cond(['t1'])}"
            y = f"SELECT t2.a, t2.e FROM t2 WHERE {self.cond(['t2'])}"
            return f"{x} {op} {y}", False
        if shape == "window":
            part = self.pick(["t1.a", "t1.e", "t1.a % 2", "t1.h"])
            f = self.pick(["ROW_NUMBER()", "RANK()", "DENSE_RANK()", f"SUM({self.num(t1)})",
                           f"COUNT({self.expr(t1)})", "LAG(t1.a)", "LEAD(t1.c, 1)",
                           f"MAX({self.num(t1)})", "FIRST_VALUE(t1.e)"])
            over = self.pick([f"PARTITION BY {part} ORDER BY t1.id", "ORDER BY t1.id",
                              f"PARTITION BY {part} ORDER BY t1.id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"])
            return f"SELECT t1.id, {f} OVER ({over}) FROM t1 ORDER BY t1.id", True
        col = self.pick(["t1.a", "t1.e", "t1.c", "t1.f", "t1.a + t1.b", "UPPER(t1.e)"])
        return f"SELECT DISTINCT {col} FROM t1 WHERE {self.cond(t1)}", False


def rows_of(g, name, n):
    out = []
    for i in range(1, n + 1):
        values = [i, g.pick(INT_VALUES), g.pick(BIG_VALUES), g.pick(DEC_VALUES),
                  g.pick(DBL_VALUES), g.pick(STR_VALUES), g.pick(DATE_VALUES),
                  g.pick(DT_VALUES), g.pick(CI_VALUES)]
        out.append("(" + ", ".join(literal(v) for v in values) + ")")
    return f"INSERT INTO {name} VALUES " + ", ".join(out)


def connect(port):
    # Every value as the server's text (conv={}): the comparison is of what clients see.
    c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", conv={},
                        autocommit=True, charset="utf8mb4")
    return c


def run(conn, sql):
    """('ok', rows) or ('error', code)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return "ok", [tuple(r) for r in cur.fetchall()]
    except pymysql.err.Error as e:
        code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
        return "error", code


def same_value(x, y):
    if x == y:
        return True
    if x is None or y is None:
        return False
    # DOUBLEs may be written with another last digit or exponent: equal within 1e-12.
    if "e" in x.lower() or "e" in y.lower() or len(x) > 16 or len(y) > 16:
        try:
            fx, fy = float(x), float(y)
            return abs(fx - fy) <= 1e-12 * max(abs(fx), abs(fy))
        except ValueError:
            return False
    return False


def same_rows(a, b, ordered):
    if len(a) != len(b):
        return False
    if not ordered:
        key = lambda r: tuple("\0NULL" if v is None else v for v in r)
        a, b = sorted(a, key=key), sorted(b, key=key)
    return all(len(x) == len(y) and all(same_value(u, v) for u, v in zip(x, y))
               for x, y in zip(a, b))


def setup(conn, suffix, inserts):
    for stmt in ["DROP DATABASE IF EXISTS rq", "CREATE DATABASE rq", "USE rq",
                 DDL.format(name="t1", suffix=suffix), DDL.format(name="t2", suffix=suffix),
                 *inserts]:
        kind, v = run(conn, stmt)
        if kind == "error":
            sys.exit(f"setup failed ({v}): {stmt}")


def oracles(conn, g):
    """One TLP and one NoREC check on Atoll: None if they hold, else what broke."""
    p = g.cond(["t1"])
    base = f"SELECT t1.id, {g.expr(['t1'])} FROM t1"
    kinds = [run(conn, base)] + [run(conn, f"{base} WHERE {w}")
                                 for w in (p, f"NOT ({p})", f"({p}) IS NULL")]
    if all(k == "ok" for k, _ in kinds):
        whole = kinds[0][1]
        parts = kinds[1][1] + kinds[2][1] + kinds[3][1]
        if not same_rows(whole, parts, False):
            return f"TLP: {base} split by {p}: {len(whole)} rows, parts {len(parts)}"
    count = run(conn, f"SELECT COUNT(*) FROM t1 WHERE {p}")
    summed = run(conn, f"SELECT SUM(CASE WHEN {p} THEN 1 ELSE 0 END) FROM t1")
    if count[0] == "ok" and summed[0] == "ok":
        n, s = count[1][0][0], summed[1][0][0] or "0"
        if n != s:
            return f"NoREC: COUNT(*) WHERE {p} = {n}, SUM(CASE) = {s}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--atoll", type=int, default=4000)
    ap.add_argument("--mariadb", type=int)
    ap.add_argument("--seed", type=int, default=random.randrange(1 << 31))
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--show", type=int, default=10, help="mismatches and failures printed")
    a = ap.parse_args()
    print(f"seed {a.seed}", flush=True)
    g = Gen(random.Random(a.seed))
    inserts = [rows_of(g, "t1", g.r.randint(15, 40)), rows_of(g, "t2", g.r.randint(10, 30))]
    atoll = connect(a.atoll)
    setup(atoll, "", inserts)
    maria = None
    if a.mariadb:
        maria = connect(a.mariadb)
        # Byte-wise comparison as Atoll's (MariaDB's default collation ignores case).
        run(maria, "SET NAMES utf8mb4 COLLATE utf8mb4_bin")
        setup(maria, " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", inserts)
    classes = dict.fromkeys(["match", "mismatch", "atoll error", "unsupported",
                             "mariadb error", "both error"], 0)
    oracle_failures = shown = 0
    for i in range(a.queries):
        sql, ordered = g.query()
        if maria:
            (ka, va), (km, vm) = run(atoll, sql), run(maria, sql)
            if ka == "ok" and km == "ok":
                cls = "match" if same_rows(va, vm, ordered) else "mismatch"
            elif ka == "error" and km == "error":
                cls = "both error"
            elif ka == "error":
                cls = "unsupported" if va == 1235 else "atoll error"
            else:
                cls = "mariadb error"
            classes[cls] += 1
            if cls in ("mismatch", "atoll error") and shown < a.show:
                shown += 1
                print(f"--- {cls} (query {i}): {sql}")
                print(f"    atoll:   {va if ka == 'error' else va[:8]}")
                print(f"    mariadb: {vm if km == 'error' else vm[:8]}")
        if not maria or i % 10 == 0:
            broke = oracles(atoll, g)
            if broke:
                oracle_failures += 1
                if shown < a.show:
                    shown += 1
                    print(f"--- oracle (query {i}): {broke}")
    if maria:
        total = sum(classes.values())
        print("classes: " + ", ".join(f"{k} {v} ({100 * v / total:.2f} %)"
                                      for k, v in classes.items()))
    checks = a.queries if not maria else (a.queries + 9) // 10
    print(f"oracle checks: {checks}, failed {oracle_failures}")
    sys.exit(1 if classes["mismatch"] or oracle_failures else 0)


main()
