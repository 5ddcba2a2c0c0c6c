"""The Python drivers most TiDB users have, against a running sql node, as an application uses
them: connect and log in, every column type read back exact through the text protocol and (for
mysql-connector-python, pure Python and C extension) the binary one, expressions typed as
MySQL types them, prepared statements re-executed, transactions, errors with their codes, large values, JSON documents, streaming, reset
and close.

Run by crates/atoll/tests/drivers.rs, which starts the cluster and sets ATOLL_PORT; each driver
and mode is one parameter of the `conn` fixture, so pytest's summary counts cases per driver.
"""

import datetime
import decimal
import os

import mysql.connector
import pymysql
import pymysql.cursors
import pytest

PORT = int(os.environ["ATOLL_PORT"])
HOST = "127.0.0.1"
# Set when the suite runs against a node that serves only TLS: every connection then uses TLS
# and verifies the node's certificate against this CA.
TLS_CA = os.environ.get("ATOLL_TLS_CA")
PYMYSQL_TLS = {"ssl": {"ca": TLS_CA}} if TLS_CA else {}
CONNECTOR_TLS = {"ssl_ca": TLS_CA, "ssl_verify_cert": True} if TLS_CA else {}

# Driver modes: (name, connect(**kwargs), whether its cursors use the binary protocol).
MODES = {
    "pymysql": (lambda **kw: pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root", **kw), False),
    "connector-text": (
        lambda **kw: mysql.connector.connect(host=HOST, port=PORT, **CONNECTOR_TLS, user="root", use_pure=True, **kw),
        False,
    ),
    "connector-prepared": (
        lambda **kw: mysql.connector.connect(host=HOST, port=PORT, **CONNECTOR_TLS, user="root", use_pure=True, **kw),
        True,
    ),
    # The same driver over its C extension (libmysqlclient), as most installs run it.
    "connector-c-text": (
        lambda **kw: mysql.connector.connect(host=HOST, port=PORT, **CONNECTOR_TLS, user="root", use_pure=False, **kw),
        False,
    ),
    "connector-c-prepared": (
        lambda **kw: mysql.connector.connect(host=HOST, port=PORT, **CONNECTOR_TLS, user="root", use_pure=False, **kw),
        True,
    ),
}


class Conn:
    """One driver's connection with the calls the cases need, whichever driver it is."""

    def __init__(self, mode, **kw):
        self.mode = mode
        connect, self.prepared = MODES[mode]
        self.raw = connect(**kw)

    def cursor(self):
        if self.prepared:
            return self.raw.cursor(prepared=True)
        return self.raw.cursor()

    def query(self, sql, params=()):
        """The rows of `sql` (with `%s` placeholders) and its columns' type codes."""
        cur = self.cursor()
        if self.prepared:
            sql = sql.replace("%s", "?")
        cur.execute(sql, params or None)
        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        types = [d[1] for d in cur.description] if cur.description else []
        cur.close()
        return rows, types

    def run(self, sql, params=()):
        cur = self.cursor()
        if self.prepared:
            sql = sql.replace("%s", "?")
        cur.execute(sql, params or None)
        n = cur.rowcount
        cur.close()
        return n

    def error_code(self, sql, params=()):
        try:
            self.run(sql, params)
        except (pymysql.MySQLError, mysql.connector.Error) as e:
            return e.args[0] if isinstance(e, pymysql.MySQLError) else e.errno
        return None

    def set_autocommit(self, on):
        if self.mode == "pymysql":
            self.raw.autocommit(on)
        else:
            self.raw.autocommit = on

    def close(self):
        if self.raw is not None:
            self.raw.close()
            self.raw = None


# The databases made so far in this run: one per driver mode, made fresh on its first use.
MADE = set()


@pytest.fixture(params=list(MODES))
def conn(request):
    c = Conn(request.param)
    db = "drv_" + request.param.replace("-", "_")
    if db not in MADE:
        c.run(f"DROP DATABASE IF EXISTS {db}")
        c.run(f"CREATE DATABASE {db}")
        MADE.add(db)
    c.run(f"USE {db}")
    c.set_autocommit(True)
    yield c
    c.close()


# MySQL's type codes (enum_field_types).
LONG, DOUBLE, NULL, LONGLONG, DATE, DATETIME = 3, 5, 6, 8, 10, 12
NEWDECIMAL, BLOB, VAR_STRING, TINY, SHORT, INT24 = 246, 252, 253, 1, 2, 9
JSON = 245


def test_connects_without_a_database(conn):
    c = Conn(conn.mode)
    assert c.query("SELECT DATABASE()")[0] == [(None,)]
    c.close()


def test_connects_with_a_database(conn):
    db = "drv_" + conn.mode.replace("-", "_")
    c = Conn(conn.mode, database=db)
    assert c.query("SELECT DATABASE()")[0] == [(db,)]
    c.close()


def test_every_column_type_reads_back_exact(conn):
    conn.run(
        "CREATE TABLE t (id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, bi BIGINT,"
        " ub BIGINT UNSIGNED, d DECIMAL(12,4), f DOUBLE, dt DATETIME, dt6 DATETIME(6), dd DATE,"
        " s VARCHAR(20), tx TEXT, b BLOB, vb VARBINARY(8))"
    )
    # The C extension's prepared statements cannot bind an integer above 2^63 - 1 (a client
    # RuntimeError, against MariaDB too): that mode reads the largest it can send.
    unsigned = 9223372036854775807 if conn.mode == "connector-c-prepared" else 18446744073709551615
    row = (
        1, -128, -32768, -8388608, -9223372036854775808, unsigned,
        decimal.Decimal("-12345678.1234"), 2.5, datetime.datetime(2024, 2, 29, 13, 5, 9),
        datetime.datetime(2024, 2, 29, 13, 5, 9, 500001), datetime.date(1999, 12, 31),
        "héllo ☃", "x" * 300, b"\x00\xff\x80binary", b"\xfe\x00",
    )
    conn.run("INSERT INTO t VALUES (" + ", ".join(["%s"] * len(row)) + ")", row)
    rows, types = conn.query("SELECT * FROM t")
    assert rows == [row]
    assert types == [LONG, TINY, SHORT, INT24, LONGLONG, LONGLONG, NEWDECIMAL, DOUBLE, DATETIME,
                     DATETIME, DATE, VAR_STRING, BLOB, BLOB, VAR_STRING]
    nulls = (2,) + (None,) * (len(row) - 1)
    conn.run("INSERT INTO t VALUES (" + ", ".join(["%s"] * len(row)) + ")", nulls)
    assert conn.query("SELECT * FROM t WHERE id = %s", (2,))[0] == [nulls]


@pytest.mark.parametrize(
    "expr,value,type_code",
    [
        ("1", 1, LONGLONG),
        ("2.5", decimal.Decimal("2.5"), NEWDECIMAL),
        ("1e3", 1000.0, DOUBLE),
        ("'é'", "é", VAR_STRING),
        ("NULL", None, NULL),
        ("1 + 2", 3, LONGLONG),
        ("7 / 2", decimal.Decimal("3.5000"), NEWDECIMAL),
        ("7 DIV 2", 3, LONGLONG),
        ("2 > 1", 1, LONGLONG),
        ("@@autocommit", 1, LONGLONG),
        ("@@max_allowed_packet", 67108864, LONGLONG),
        ("CONCAT('a', 1)", "a1", VAR_STRING),
        ("IFNULL(NULL, 5)", 5, LONGLONG),
    ],
)
def test_expressions_are_typed_as_mysql_types_them(conn, expr, value, type_code):
    rows, types = conn.query(f"SELECT {expr}")
    assert rows == [(value,)]
    assert types == [type_code]


def test_aggregates_functions_and_variables_have_mysql_types(conn):
    conn.run("CREATE TABLE n (id INT PRIMARY KEY, v INT, d DECIMAL(6,2))")
    conn.run("INSERT INTO n VALUES (1, 10, 1.25), (2, 20, 2.50)")
    rows, types = conn.query("SELECT COUNT(*), SUM(v), SUM(d), MAX(v), AVG(v) FROM n")
    assert rows == [(2, decimal.Decimal(30), decimal.Decimal("3.75"), 20, decimal.Decimal("15.0000"))]
    assert types == [LONGLONG, NEWDECIMAL, NEWDECIMAL, LONG, NEWDECIMAL]
    rows, types = conn.query("SELECT NOW(), CURDATE(), CONNECTION_ID(), LAST_INSERT_ID()")
    assert isinstance(rows[0][0], datetime.datetime)
    assert isinstance(rows[0][1], datetime.date)
    assert isinstance(rows[0][2], int) and isinstance(rows[0][3], int)
    conn.run("SET @i = 42, @s = 'text'")
    assert conn.query("SELECT @i, @s, @unset") == ([(42, "text", None)], [LONGLONG, VAR_STRING, NULL])


def test_prepared_statements_run_again_with_new_values(conn):
    conn.run("CREATE TABLE p (id INT PRIMARY KEY, name VARCHAR(10))")
    for i in range(5):
        conn.run("INSERT INTO p VALUES (%s, %s)", (i, f"n{i}"))
    cur = conn.cursor()
    sql = "SELECT name FROM p WHERE id = %s"
    if conn.prepared:
        sql = sql.replace("%s", "?")
    for i in [3, 1, 4, 1]:
        cur.execute(sql, (i,))
        assert list(cur.fetchall()) == [(f"n{i}",)]
    cur.close()


def test_transactions_commit_and_roll_back(conn):
    conn.run("CREATE TABLE acct (id INT PRIMARY KEY, bal INT)")
    conn.run("INSERT INTO acct VALUES (1, 100)")
    conn.set_autocommit(False)
    conn.run("UPDATE acct SET bal = bal - 10 WHERE id = 1")
    conn.raw.rollback()
    assert conn.query("SELECT bal FROM acct")[0] == [(100,)]
    conn.run("UPDATE acct SET bal = bal - 10 WHERE id = 1")
    conn.raw.commit()
    conn.set_autocommit(True)
    other = Conn(conn.mode, database="drv_" + conn.mode.replace("-", "_"))
    assert other.query("SELECT bal FROM acct")[0] == [(90,)]
    other.close()


def test_errors_carry_mysql_codes(conn):
    conn.run("CREATE TABLE e (id INT PRIMARY KEY)")
    conn.run("INSERT INTO e VALUES (1)")
    assert conn.error_code("INSERT INTO e VALUES (%s)", (1,)) == 1062
    assert conn.error_code("SELECT * FROM missing") == 1146
    # The error stays for SHOW ERRORS, also one of COM_STMT_PREPARE (the prepared modes).
    cur = conn.raw.cursor()
    cur.execute("SHOW ERRORS")
    assert [e[1] for e in cur.fetchall()] == [1146]
    cur.close()
    assert conn.error_code("SELECT nope FROM e") == 1054
    # The connection is still usable after each error.
    assert conn.query("SELECT COUNT(*) FROM e")[0] == [(1,)]


def test_large_values_round_trip(conn):
    conn.run("CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB, t LONGTEXT)")
    blob = bytes(range(256)) * 4096  # 1 MiB
    text = "ü" * 300_000
    conn.run("INSERT INTO big VALUES (1, %s, %s)", (blob, text))
    assert conn.query("SELECT b, t FROM big")[0] == [(blob, text)]


def test_json_documents_round_trip(conn):
    conn.run("CREATE TABLE IF NOT EXISTS jd (id INT PRIMARY KEY, j JSON)")
    conn.run("DELETE FROM jd")
    conn.run("INSERT INTO jd VALUES (%s, %s)", (1, '{"name": "Jöe", "tags": [1, 2.5, null]}'))
    rows, types = conn.query("SELECT j, j->'$.tags', j->>'$.name', JSON_LENGTH(j) FROM jd WHERE id = %s", (1,))
    text = lambda v: v.decode() if isinstance(v, (bytes, bytearray)) else v
    assert [text(v) for v in rows[0][:3]] == ['{"name": "Jöe", "tags": [1, 2.5, null]}', "[1, 2.5, null]", "Jöe"]
    assert rows[0][3] == 2
    assert types[:2] == [JSON, JSON]
    assert conn.error_code("INSERT INTO jd VALUES (%s, %s)", (2, "{not json")) == 3140


def test_many_rows_stream(conn):
    conn.run("CREATE TABLE s (id INT PRIMARY KEY, v VARCHAR(10))")
    values = ", ".join(f"({i}, 'v{i}')" for i in range(5000))
    conn.run(f"INSERT INTO s VALUES {values}")
    if conn.mode == "pymysql":
        cur = conn.raw.cursor(pymysql.cursors.SSCursor)
    else:
        cur = conn.raw.cursor(buffered=False)
    cur.execute("SELECT id, v FROM s ORDER BY id")
    n = 0
    for row in cur:
        assert row == (n, f"v{n}")
        n += 1
    assert n == 5000
    cur.close()


def test_reset_and_close(conn):
    conn.run("SET @kept = 1")
    if conn.mode == "pymysql":
        conn.raw.ping(reconnect=False)
    else:
        conn.raw.cmd_reset_connection()
        assert conn.query("SELECT @kept")[0] == [(None,)]
    conn.close()
    again = Conn(conn.mode)
    assert again.query("SELECT 1")[0] == [(1,)]
    again.close()


def test_several_statements_in_one_query_answer_each():
    from pymysql.constants import CLIENT

    c = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root", client_flag=CLIENT.MULTI_STATEMENTS)
    cur = c.cursor()
    cur.execute("SELECT 1; SET @m = 5; SELECT @m, 'x'")
    results = [list(cur.fetchall())]
    while cur.nextset():
        results.append(list(cur.fetchall()))
    assert results == [[(1,)], [], [(5, "x")]]
    # An error stops the statements after it, and the connection goes on.
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("SELECT 1; SELECT * FROM no_such_db.t; SELECT 3")
        while cur.nextset():
            pass
    assert e.value.args[0] == 1049 or e.value.args[0] == 1146
    cur.execute("SELECT 9")
    assert cur.fetchall() == ((9,),)
    c.close()


def test_result_columns_are_named_as_the_query_wrote_them(conn):
    # MariaDB names them the same; over the binary protocol too (the prepared modes).
    cur = conn.cursor()
    cur.execute("SELECT 1+1, count(*), CONCAT('a','b'), 2 AS two, 'x', -1,  2.50 * 2 FROM (SELECT 1) t")
    assert [d[0] for d in cur.description] == [
        "1+1", "count(*)", "CONCAT('a','b')", "two", "x", "-1", "2.50 * 2"]
    cur.fetchall()
    cur.close()


def test_several_statements_need_the_clients_consent(conn):
    if conn.mode != "pymysql":
        return
    from pymysql.constants import COMMAND

    # PyMySQL does not ask for CLIENT_MULTI_STATEMENTS: a `;` cannot smuggle in a second
    # statement (TiDB's 8130), and nothing ran.
    c = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root")
    cur = c.cursor()
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("SET @smuggled = 1; SELECT 2")
    assert e.value.args[0] == 8130
    cur.execute("SHOW ERRORS")
    assert [r[1] for r in cur.fetchall()] == [8130]
    cur.execute("SELECT @smuggled")
    assert cur.fetchall() == ((None,),)
    # A comment after the `;` is no second statement.
    cur.execute("SELECT 3; -- done")
    assert cur.fetchall() == ((3,),)
    # COM_SET_OPTION turns them on (and off), as libmysqlclient's mysql_set_server_option.
    for option, expect in [(b"\x00\x00", None), (b"\x01\x00", 8130)]:
        c._execute_command(COMMAND.COM_SET_OPTION, option)
        assert c._read_packet().is_eof_packet()
        try:
            cur.execute("SELECT 1; SELECT 2")
            while cur.nextset():
                pass
            got = None
        except pymysql.MySQLError as err:
            got = err.args[0]
        assert got == expect
    # tidb_multi_statement_mode lets a session take them anyway (WARN: with a warning).
    cur.execute("SET tidb_multi_statement_mode = 'WARN'")
    cur.execute("SELECT 1; SELECT 2")
    while cur.nextset():
        pass
    cur.execute("SHOW WARNINGS")
    assert [w[1] for w in cur.fetchall()] == [8130]
    cur.execute("SET tidb_multi_statement_mode = 'ON'")
    cur.execute("SELECT 1; SELECT 2")
    while cur.nextset():
        pass
    c.close()


def test_metadata_statements_tools_send(conn):
    conn.run("CREATE TABLE m (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, price INT,"
             " UNIQUE KEY name_u (name), KEY price_i (price))")
    rows, _ = conn.query("SHOW INDEX FROM m")
    assert [(r[2], r[3], r[4], r[1]) for r in rows] == [
        ("PRIMARY", 1, "id", 0), ("name_u", 1, "name", 0), ("price_i", 1, "price", 1)]
    rows, _ = conn.query("SHOW KEYS FROM m WHERE Key_name = 'price_i'")
    assert [r[4] for r in rows] == ["price"]
    rows, _ = conn.query("SHOW FULL COLUMNS FROM m LIKE 'na%'")
    assert [(r[0], r[1], r[3]) for r in rows] == [("name", "varchar(20)", "NO")]
    db = conn.query("SELECT DATABASE()")[0][0][0]
    rows, _ = conn.query("SHOW CREATE DATABASE " + db)
    assert rows[0][1].startswith(f"CREATE DATABASE `{db}`")
    rows, _ = conn.query(
        "SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'm' ORDER BY INDEX_NAME", (db,))
    # In utf8mb4_bin's order, TiDB's default collation: upper case first.
    assert rows == [("PRIMARY", "id", 0), ("name_u", "name", 0), ("price_i", "price", 1)]
    rows, _ = conn.query(
        "SELECT CONSTRAINT_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'm'", (db,))
    assert sorted(rows) == [("PRIMARY", "PRIMARY KEY"), ("name_u", "UNIQUE")]
    rows, _ = conn.query("SHOW VARIABLES WHERE Variable_name = 'autocommit'")
    assert rows == [("autocommit", "1")]
    assert conn.query("SHOW ENGINES")[0][0][0] == "InnoDB"
    assert ("utf8mb4", "UTF-8 Unicode", "utf8mb4_bin", 4) in conn.query("SHOW CHARSET")[0]


def test_isolation_levels_as_tidb_takes_them(conn):
    conn.run("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    assert conn.query("SELECT @@transaction_isolation, @@tx_isolation")[0] == [
        ("READ-COMMITTED", "READ-COMMITTED")]
    assert conn.error_code("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE") == 8048
    assert conn.error_code("SET transaction_isolation = 'BOGUS'") == 1231


def test_set_transaction_without_a_scope_is_for_the_next_transaction_only(conn):
    if conn.mode != "pymysql":
        return
    conn.run("CREATE TABLE ro (id INT PRIMARY KEY)")
    # READ ONLY: writes are MySQL's 1792; the next transaction after it writes again.
    conn.run("SET TRANSACTION READ ONLY")
    assert conn.error_code("INSERT INTO ro VALUES (1)") == 1792
    conn.run("INSERT INTO ro VALUES (2)")
    conn.run("START TRANSACTION READ ONLY")
    assert conn.error_code("DELETE FROM ro") == 1792
    assert conn.query("SELECT id FROM ro")[0] == [(2,)]
    # Not while a transaction is open (1568), with or without the scope word's SESSION.
    assert conn.error_code("SET TRANSACTION ISOLATION LEVEL READ COMMITTED") == 1568
    conn.run("COMMIT")
    conn.run("SET SESSION TRANSACTION READ ONLY")
    for _ in range(2):
        assert conn.error_code("UPDATE ro SET id = 3") == 1792
    conn.run("SET SESSION TRANSACTION READ WRITE")
    conn.run("UPDATE ro SET id = 3")
    assert conn.query("SELECT id FROM ro")[0] == [(3,)]
    # COMMIT (as ROLLBACK and a DDL) forgets what SET TRANSACTION set for the next one.
    conn.run("SET TRANSACTION READ ONLY")
    conn.run("COMMIT")
    conn.run("INSERT INTO ro VALUES (4)")
    assert conn.error_code("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE") == 8048


def test_sql_prepare_execute_and_deallocate(conn):
    if conn.prepared:
        # As MySQL: SQL's PREPARE is not itself a statement to prepare.
        assert conn.error_code("PREPARE q FROM 'SELECT 1'") == 1295
        return
    conn.run("CREATE TABLE sp (id INT PRIMARY KEY, v VARCHAR(10))")
    conn.run("INSERT INTO sp VALUES (1, 'one'), (2, 'two')")
    conn.run("PREPARE q FROM 'SELECT v FROM sp WHERE id = ?'")
    conn.run("SET @id = 2")
    assert conn.query("EXECUTE q USING @id")[0] == [("two",)]
    conn.run("SET @text = 'SELECT COUNT(*) FROM sp'")
    conn.run("PREPARE q FROM @text")
    assert conn.query("EXECUTE q")[0] == [(2,)]
    assert conn.error_code("EXECUTE q USING @id") == 1210
    conn.run("DEALLOCATE PREPARE q")
    assert conn.error_code("EXECUTE q") == 1243


def test_load_data_local_infile(conn, tmp_path):
    if conn.mode != "pymysql":
        return  # one driver is enough for the protocol exchange; the SQL is the same
    c = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root", local_infile=True,
                        database="drv_pymysql", autocommit=True)
    cur = c.cursor()
    cur.execute("CREATE TABLE ld (id INT PRIMARY KEY, name VARCHAR(4), v DOUBLE, note VARCHAR(40))")
    csv = tmp_path / "rows.csv"
    csv.write_bytes(
        b'id,name,v,note\r\n'
        b'1,one,1.5,"plain"\r\n'
        b'2,two,\\N,"with, comma and ""quotes"""\r\n'
        b'3,three,abc,x\r\n'   # too long and not a number: warnings, kept as MySQL keeps them
        b'1,dup,9,y\r\n'       # a taken key: skipped
        b'4\r\n'               # too few fields: defaults
        b'5,five,2,z,extra\r\n'  # too many: the extra one is dropped
    )
    cur.execute(
        f"LOAD DATA LOCAL INFILE '{csv}' INTO TABLE ld FIELDS TERMINATED BY ',' "
        "OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES")
    assert cur.rowcount == 5
    cur.execute("SHOW WARNINGS")
    assert [w[1] for w in cur.fetchall()] == [1265, 1366, 1261, 1262, 1062]
    cur.execute("SELECT * FROM ld ORDER BY id")
    assert cur.fetchall() == (
        (1, "one", 1.5, "plain"), (2, "two", None, 'with, comma and "quotes"'),
        (3, "thre", 0.0, "x"), (4, None, None, None), (5, "five", 2.0, "z"))
    # Many rows: several batches, one transaction each.
    big = tmp_path / "big.tsv"
    big.write_text("".join(f"{i}\tn\t{i}\t\\N\n" for i in range(10, 50_010)))
    cur.execute(f"LOAD DATA LOCAL INFILE '{big}' INTO TABLE ld")
    assert cur.rowcount == 50_000
    cur.execute("SELECT COUNT(*), SUM(v) FROM ld WHERE id >= 10")
    assert cur.fetchall() == ((50_000, float(sum(range(10, 50_010)))),)
    # A key again in a later batch (batches commit while the next is read): IGNORE keeps the
    # first row, REPLACE the last, as when the batches run one after another.
    again = tmp_path / "again.tsv"
    again.write_text("".join(f"{i}\tfirst\n" for i in range(6000))
                     + "".join(f"{i}\tsecond\n" for i in range(3000, 9000)))
    for verb, kept in [("", (9000, 6000, 3000)), ("REPLACE", (9000, 3000, 6000))]:
        cur.execute("DROP TABLE IF EXISTS twice")
        cur.execute("CREATE TABLE twice (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute(f"LOAD DATA LOCAL INFILE '{again}' {verb} INTO TABLE twice")
        cur.execute("SELECT COUNT(*), SUM(v = 'first'), SUM(v = 'second') FROM twice")
        assert tuple(int(x) for x in cur.fetchone()) == kept
    cur.execute("SHOW COUNT(*) WARNINGS")
    assert cur.fetchone() == (0,)
    # Fields into user variables, and SET from them (MySQL's way to convert a field).
    dated = tmp_path / "dated.csv"
    dated.write_bytes(b"1,12/31/2024,5\n2,01/02/2025,\\N\n")
    cur.execute("CREATE TABLE ls (id INT PRIMARY KEY, d DATE, n INT, twice INT)")
    cur.execute(f"LOAD DATA LOCAL INFILE '{dated}' INTO TABLE ls FIELDS TERMINATED BY ',' "
                "(id, @d, @n) SET d = STR_TO_DATE(@d, '%m/%d/%Y'), n = @n, "
                "twice = IFNULL(@n, 0) * 2 + id")
    cur.execute("SELECT id, d, n, twice FROM ls ORDER BY id")
    assert cur.fetchall() == ((1, datetime.date(2024, 12, 31), 5, 11),
                              (2, datetime.date(2025, 1, 2), None, 2))
    # CHAR and BINARY values as the columns store them, cut, zero or default (MariaDB's).
    fixed = tmp_path / "fixed.csv"
    fixed.write_bytes(b"1,ab cd\n")
    cur.execute("CREATE TABLE lf (id INT PRIMARY KEY, c CHAR(3), b BINARY(4) NOT NULL, "
                "d BINARY(2) DEFAULT 'a')")
    cur.execute(f"LOAD DATA LOCAL INFILE '{fixed}' INTO TABLE lf FIELDS TERMINATED BY ',' (id, c)")
    cur.execute("SELECT LENGTH(c), HEX(b), HEX(d) FROM lf")
    assert cur.fetchall() == ((2, "00000000", "6100"),)
    c.close()


def test_kill_ends_a_connection_and_its_transaction(conn):
    if conn.mode != "pymysql":
        return
    victim = Conn("pymysql", database="drv_pymysql")
    conn.run("CREATE TABLE killed (id INT PRIMARY KEY)")
    victim.set_autocommit(False)
    victim.run("INSERT INTO killed VALUES (1)")
    victim_id = victim.query("SELECT CONNECTION_ID()")[0][0][0]
    assert victim_id in [r[0] for r in conn.query("SHOW PROCESSLIST")[0]]
    conn.run(f"KILL {victim_id}")
    with pytest.raises(pymysql.err.OperationalError):
        victim.query("SELECT 1")
    assert conn.query("SELECT COUNT(*) FROM killed")[0] == [(0,)]
    assert conn.error_code("KILL 4000000000") == 1094


def test_a_connection_opened_without_autocommit_does_not_commit_by_itself(conn):
    # PyMySQL and mysql-connector-python open with autocommit off (PEP 249); they turn the
    # server's off only if its greeting says it is on.
    fresh = Conn(conn.mode, database="drv_" + conn.mode.replace("-", "_"))
    assert fresh.query("SELECT @@autocommit")[0] == [(0,)]
    fresh.close()


def test_kill_query_stops_a_waiting_statement_and_keeps_its_transaction(conn):
    if conn.mode != "pymysql":
        return
    import threading

    conn.run("CREATE TABLE waited (id INT PRIMARY KEY, v INT)")
    conn.run("INSERT INTO waited VALUES (1, 0), (2, 0)")
    holder = Conn("pymysql", database="drv_pymysql")
    holder.set_autocommit(False)
    holder.run("SELECT * FROM waited WHERE id = 1 FOR UPDATE")
    victim = Conn("pymysql", database="drv_pymysql")
    victim.set_autocommit(False)
    victim.run("UPDATE waited SET v = 2 WHERE id = 2")
    victim_id = victim.query("SELECT CONNECTION_ID()")[0][0][0]
    outcome = []

    def blocked_update():
        outcome.append(victim.error_code("UPDATE waited SET v = 1 WHERE id = 1"))

    t = threading.Thread(target=blocked_update)
    t.start()
    # Until the statement waits on the lock (KILL QUERY of an idle connection does nothing).
    for _ in range(100):
        infos = [r[7] for r in conn.query("SHOW PROCESSLIST")[0] if r[0] == victim_id]
        if infos and infos[0] and infos[0].startswith("UPDATE"):
            break
        threading.Event().wait(0.05)
    conn.run(f"KILL QUERY {victim_id}")
    t.join(10)
    assert outcome == [1317], outcome
    # The connection and its transaction stay: its earlier write commits.
    victim.raw.commit()
    holder.raw.rollback()
    assert conn.query("SELECT id, v FROM waited ORDER BY id")[0] == [(1, 0), (2, 2)]
    victim.close()
    holder.close()


def _kill_query_while(conn, victim_id, verb, run, kill="KILL QUERY"):
    """Runs `run` (which returns an error code) in a thread; once SHOW PROCESSLIST shows the
    victim running a statement that starts with `verb`, sends `kill`; returns the code."""
    import threading

    outcome = []
    t = threading.Thread(target=lambda: outcome.append(run()))
    t.start()
    for _ in range(400):
        infos = [r[7] for r in conn.query("SHOW PROCESSLIST")[0] if r[0] == victim_id]
        if infos and infos[0] and infos[0].startswith(verb):
            break
        threading.Event().wait(0.01)
    conn.run(f"{kill} {victim_id}")
    t.join(60)
    return outcome


def test_kill_query_stops_a_ddl_and_a_load_between_their_batches(conn, tmp_path):
    if conn.mode != "pymysql":
        return
    conn.run("CREATE TABLE backfilled (id INT PRIMARY KEY, v INT)")
    rows = ", ".join(f"({i}, {i % 7})" for i in range(20_000))
    conn.run(f"INSERT INTO backfilled VALUES {rows}")
    victim = Conn("pymysql", database="drv_pymysql")
    victim_id = victim.query("SELECT CONNECTION_ID()")[0][0][0]
    # ALTER waits a schema lease before its backfill: KILL QUERY comes before the first of
    # its 20 batches; the half-made index goes again, as after any failure.
    outcome = _kill_query_while(conn, victim_id, "ALTER",
                                lambda: victim.error_code("ALTER TABLE backfilled ADD INDEX v_i (v)"))
    assert outcome == [1317], outcome
    assert [r[2] for r in conn.query("SHOW INDEX FROM backfilled")[0]] == ["PRIMARY"]
    assert conn.query("SELECT COUNT(*) FROM backfilled WHERE v = 3")[0] == [(2857,)]
    # The connection stays, and its next statement is not interrupted.
    assert victim.query("SELECT COUNT(*) FROM backfilled")[0] == [(20_000,)]
    # KILL CONNECTION interrupts it too, and closes the connection once the ALTER has taken
    # its index out again.
    outcome = _kill_query_while(conn, victim_id, "ALTER",
                                lambda: victim.error_code("ALTER TABLE backfilled ADD INDEX v_i (v)"),
                                kill="KILL")
    # 1317 if the answer came before the connection closed; a lost connection otherwise.
    assert len(outcome) == 1 and outcome[0] is not None, outcome
    assert [r[2] for r in conn.query("SHOW INDEX FROM backfilled")[0]] == ["PRIMARY"]
    with pytest.raises(pymysql.MySQLError):
        victim.query("SELECT 1")

    loader = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root",
                             local_infile=True, database="drv_pymysql", autocommit=True)
    loader_id = loader.thread_id()
    conn.run("CREATE TABLE loaded (id INT PRIMARY KEY, v INT)")
    big = tmp_path / "big.tsv"
    big.write_text("".join(f"{i}\t{i}\n" for i in range(300_000)))

    def load():
        try:
            loader.cursor().execute(f"LOAD DATA LOCAL INFILE '{big}' INTO TABLE loaded")
        except pymysql.MySQLError as e:
            return e.args[0]
        return None

    outcome = _kill_query_while(conn, loader_id, "LOAD DATA", load)
    assert outcome == [1317], outcome
    cur = loader.cursor()
    cur.execute("SHOW ERRORS")
    assert [e[1] for e in cur.fetchall()] == [1317]
    # The batches that committed before it stay (as TiDB's); the rest of the file is not read.
    loaded = conn.query("SELECT COUNT(*) FROM loaded")[0][0][0]
    assert loaded < 300_000
    cur.execute("SELECT COUNT(*) FROM loaded")
    assert cur.fetchone() == (loaded,)
    loader.close()


def test_kill_of_another_accounts_connection_is_refused(conn):
    if conn.mode != "pymysql":
        return
    conn.run("DROP USER IF EXISTS killer")
    conn.run("CREATE USER killer IDENTIFIED BY 'k'")
    killer = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="killer", password="k")
    root_id = conn.query("SELECT CONNECTION_ID()")[0][0][0]
    with pytest.raises(pymysql.err.OperationalError) as refused:
        killer.cursor().execute(f"KILL {root_id}")
    assert refused.value.args[0] == 1095
    # Its own connection it may end, also by COM_PROCESS_KILL (PyMySQL's kill()).
    other = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="killer", password="k")
    killer.kill(other.thread_id())
    with pytest.raises(pymysql.err.OperationalError):
        other.cursor().execute("SELECT 1")
    killer.close()


def test_protocol_commands_tools_send():
    c = mysql.connector.connect(host=HOST, port=PORT, **CONNECTOR_TLS, user="root", use_pure=True)
    cur = c.cursor()
    cur.execute("DROP DATABASE IF EXISTS drv_commands")
    cur.execute("CREATE DATABASE drv_commands")
    cur.execute("USE drv_commands")
    cur.execute("CREATE TABLE f (id INT PRIMARY KEY, name VARCHAR(10), note TEXT)")
    cur.execute("INSERT INTO f VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'z')")
    c.commit()
    # COM_STATISTICS (mysqladmin status).
    stats = c.cmd_statistics()
    assert stats["Uptime"] >= 0 and stats["Questions"] > 0
    # COM_FIELD_LIST (the mysql client's completion): the table's columns, then EOF.
    from mysql.connector.constants import ServerCmd

    first = c._send_cmd(ServerCmd.FIELD_LIST, b"f\x00n%")
    packets = [bytes(first)]
    while packets[-1][4] != 0xFE:
        packets.append(bytes(c._socket.recv()))
    assert len(packets) == 3 and b"name" in packets[0] and b"note" in packets[1]
    # A cursor (COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY, then COM_STMT_FETCH).
    st = c.cmd_stmt_prepare(b"SELECT id, name FROM f ORDER BY id")
    _, columns, eof = c.cmd_stmt_execute(st["statement_id"], flags=1)
    CURSOR_EXISTS, LAST_ROW_SENT = 64, 128
    assert eof["status_flag"] & CURSOR_EXISTS
    c.cmd_stmt_fetch(st["statement_id"], 2)
    rows, eof = c.get_rows(binary=True, columns=columns)
    assert [tuple(r) for r in rows] == [(1, "a"), (2, "b")] and eof["status_flag"] & CURSOR_EXISTS
    c.cmd_stmt_fetch(st["statement_id"], 2)
    rows, eof = c.get_rows(binary=True, columns=columns)
    assert [tuple(r) for r in rows] == [(3, "c")] and eof["status_flag"] & LAST_ROW_SENT
    c.cmd_stmt_fetch(st["statement_id"], 1)
    with pytest.raises(mysql.connector.Error) as closed:
        c.get_rows(binary=True, columns=columns)
    assert closed.value.errno == 1421
    # COM_CHANGE_USER: another account, a fresh session, the database it names.
    cur = c.cursor()
    cur.execute("DROP USER IF EXISTS changed")
    cur.execute("CREATE USER changed IDENTIFIED BY 'pw'")
    cur.execute("GRANT SELECT ON drv_commands.* TO changed")
    cur.execute("SET @gone = 1")
    c.cmd_change_user(username="changed", password="pw", database="drv_commands")
    cur = c.cursor()
    cur.execute("SELECT CURRENT_USER(), DATABASE(), @gone")
    assert cur.fetchall() == [("changed@%", "drv_commands", None)]
    # A wrong password is 1045 and ends the connection.
    with pytest.raises(mysql.connector.Error) as denied:
        c.cmd_change_user(username="changed", password="wrong")
    assert denied.value.errno == 1045


def test_status_counters_and_executable_comments(conn):
    before = dict(conn.query("SHOW SESSION STATUS LIKE 'Com_select'")[0])["Com_select"]
    conn.query("SELECT 1")
    after = dict(conn.query("SHOW SESSION STATUS LIKE 'Com_select'")[0])["Com_select"]
    assert int(after) == int(before) + 1
    names = [r[0] for r in conn.query("SHOW /*!50002 GLOBAL */ STATUS")[0]]
    for name in ["Questions", "Com_insert", "Threads_connected", "Uptime", "Slow_queries"]:
        assert name in names
    shown = conn.query("SHOW /*!50002 SESSION */ STATUS /*!99999 WHERE 0 */ LIKE 'Uptime'")[0]
    assert [r[0] for r in shown] == ["Uptime"]


def test_select_into_outfile_writes_what_load_data_reads_back(conn, tmp_path):
    if conn.mode != "pymysql":
        return
    c = pymysql.connect(host=HOST, port=PORT, **PYMYSQL_TLS, user="root", local_infile=True,
                        database="drv_pymysql", autocommit=True)
    cur = c.cursor()
    cur.execute("CREATE TABLE o (id INT PRIMARY KEY, s VARCHAR(20), p DECIMAL(6,2))")
    cur.execute("INSERT INTO o VALUES (1, 'a,\"b\"', 1.5), (2, NULL, NULL)")
    out = tmp_path / "o.csv"
    into = f"INTO OUTFILE '{out}' FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
    cur.execute(f"SELECT * FROM o ORDER BY id {into}")
    assert cur.rowcount == 2
    assert out.read_bytes() == b'1,"a,\\"b\\"",1.50\n2,\\N,\\N\n'
    # The file is never overwritten.
    with pytest.raises(pymysql.err.MySQLError) as exists:
        cur.execute(f"SELECT * FROM o {into}")
    assert exists.value.args[0] == 1086
    # A copy of the table's definition takes the file back.
    cur.execute("CREATE TABLE o2 LIKE o")
    cur.execute(f"LOAD DATA LOCAL INFILE '{out}' INTO TABLE o2 FIELDS TERMINATED BY ',' "
                "OPTIONALLY ENCLOSED BY '\"'")
    cur.execute("SELECT * FROM o2 ORDER BY id")
    assert cur.fetchall() == ((1, 'a,"b"', decimal.Decimal("1.50")), (2, None, None))
    c.close()


def test_explain_analyze_reports_actual_rows_and_times(conn):
    if conn.mode != "pymysql":
        return
    import re

    conn.run("CREATE TABLE ea (id INT PRIMARY KEY, a INT, KEY ia (a))")
    conn.run("INSERT INTO ea VALUES " + ", ".join(f"({i}, {i % 4})" for i in range(40)))
    conn.run("ANALYZE TABLE ea")
    rows, _ = conn.query(
        "EXPLAIN ANALYZE SELECT a, COUNT(*) FROM ea WHERE id < 30 GROUP BY a ORDER BY a LIMIT 3")
    # id, actRows, task, access object, execution info, operator info
    by_operator = {}
    for r in rows:  # the first of a name is the root one (the cop HashAgg follows)
        by_operator.setdefault(re.sub(r"^[^A-Za-z]*", "", r[0]).rsplit("_", 1)[0], r)
    assert by_operator["Projection"][1] == "3"
    assert by_operator["TopN"][1] == "3"
    assert by_operator["HashAgg"][1] == "4"
    for op in ["Projection", "TopN", "HashAgg"]:
        assert re.fullmatch(r"time:[0-9.]+ms, loops:1", by_operator[op][4]), by_operator[op]
    # The statement ran: its result is what the SELECT returns.
    assert conn.query("SELECT a, COUNT(*) FROM ea WHERE id < 30 GROUP BY a ORDER BY a LIMIT 3")[0] == [
        (0, 8), (1, 8), (2, 7)]


def test_tidb_trx_and_slow_query_show_this_nodes_transactions_and_slow_statements(conn):
    if conn.mode != "pymysql":
        return
    conn.run("CREATE TABLE trx (id INT PRIMARY KEY)")
    me = conn.query("SELECT CONNECTION_ID()")[0][0][0]
    conn.set_autocommit(False)
    conn.run("INSERT INTO trx VALUES (1)")
    rows = conn.query("SELECT SESSION_ID, STATE, USER, ID FROM information_schema.TIDB_TRX")[0]
    mine = [r for r in rows if r[0] == me]
    assert [r[:3] for r in mine] == [(me, "Running", "root")]
    conn.raw.rollback()
    conn.set_autocommit(True)
    # Gone with its rollback (the query that looks runs in a transaction of its own).
    ids = [r[0] for r in conn.query("SELECT ID FROM information_schema.TIDB_TRX")[0]]
    assert mine[0][3] not in ids
    conn.run("SET GLOBAL tidb_slow_log_threshold = 0")
    try:
        conn.query("SELECT 'marked slow' FROM trx")
    finally:
        conn.run("SET GLOBAL tidb_slow_log_threshold = 300")
    rows = conn.query("SELECT Conn_ID, Succ, Query FROM information_schema.SLOW_QUERY "
                      "WHERE Query LIKE '%marked slow%'")[0]
    assert (me, 1, "SELECT 'marked slow' FROM trx;") in rows


def test_non_ascii_text_outside_quotes_runs(conn):
    # Names and comments in any script (finding keywords once cut a character in two).
    assert conn.query("SELECT 1 AS 名字 /* é */ -- ü\n")[0] == [(1,)]
