// MySQL Connector/J against a running sql node, as a Java application uses it, with
// client-side prepared statements (the default: placeholders filled into the text protocol)
// and server-side ones (useServerPrepStmts=true, the binary protocol): connect and log in,
// every column type read back as the Java type JDBC maps it to, expressions typed as MySQL
// types them, prepared statements run again, batches, transactions and isolation levels,
// errors with their codes, large values, streaming, and the DatabaseMetaData an ORM reads.
//
// A program of its own (java DriverSuite.java, with the driver's jar on the class path), so the
// suite needs no build tool: each case prints PASS or FAIL with its mode, and the exit status
// is the number of failures. Run by crates/atoll/tests/drivers.rs, which sets ATOLL_PORT.

import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.*;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.*;

public class DriverSuite {
    interface Case {
        void run(Connection c, String mode) throws Exception;
    }

    static final String PORT = System.getenv("ATOLL_PORT");
    // With ATOLL_TLS_TRUSTSTORE (a PKCS12 store holding the test's CA, password "atoll-ca") the
    // suite runs against a node that serves only TLS, and verifies its certificate.
    static final String TLS = System.getenv("ATOLL_TLS_TRUSTSTORE") == null ? "sslMode=DISABLED"
            : "sslMode=VERIFY_CA&trustCertificateKeyStoreType=PKCS12&trustCertificateKeyStorePassword=atoll-ca"
              + "&trustCertificateKeyStoreUrl=file:" + System.getenv("ATOLL_TLS_TRUSTSTORE");
    static final Map<String, String> MODES = new LinkedHashMap<>();

    static {
        MODES.put("client-prepared", "useServerPrepStmts=false");
        MODES.put("server-prepared", "useServerPrepStmts=true");
    }

    static Connection connect(String db, String mode) throws SQLException {
        String url = "jdbc:mysql://127.0.0.1:" + PORT + "/" + db + "?" + MODES.get(mode)
                + "&" + TLS + "&allowPublicKeyRetrieval=true&rewriteBatchedStatements=true";
        return DriverManager.getConnection(url, "root", "");
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static void eq(Object got, Object want, String what) {
        if (!Objects.equals(got, want)) throw new AssertionError(what + ": got " + got + " (" + (got == null ? "null" : got.getClass().getSimpleName()) + "), want " + want);
    }

    static void exec(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static int errorCode(Connection c, String sql, Object... params) {
        try (PreparedStatement p = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) p.setObject(i + 1, params[i]);
            p.execute();
            return 0;
        } catch (SQLException e) {
            return e.getErrorCode();
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, Case> cases = new LinkedHashMap<>();
        cases.put("connects without and with a database", (c, mode) -> {
            try (Connection none = connect("", mode); Statement s = none.createStatement(); ResultSet r = s.executeQuery("SELECT DATABASE()")) {
                check(r.next(), "a row");
                eq(r.getString(1), null, "DATABASE() with none");
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT DATABASE()")) {
                check(r.next(), "a row");
                eq(r.getString(1), c.getCatalog(), "DATABASE()");
            }
        });
        cases.put("every column type reads back as its Java type", (c, mode) -> {
            exec(c, "CREATE TABLE t (id INT PRIMARY KEY, bi BIGINT, ub BIGINT UNSIGNED, d DECIMAL(12,4), f DOUBLE,"
                    + " dt DATETIME, dt6 DATETIME(6), dd DATE, s VARCHAR(20), b BLOB)");
            byte[] blob = {0, (byte) 0xff, (byte) 0x80, '\'', '\\'};
            try (PreparedStatement p = c.prepareStatement("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                p.setInt(1, 1);
                p.setLong(2, Long.MIN_VALUE);
                // Connector/J sends a BigInteger as a signed LONGLONG (this one as -1), to MySQL too.
                p.setString(3, "18446744073709551615");
                p.setBigDecimal(4, new BigDecimal("-12345678.1234"));
                p.setDouble(5, 2.5);
                p.setObject(6, LocalDateTime.of(2024, 2, 29, 13, 5, 9));
                p.setObject(7, LocalDateTime.of(2024, 2, 29, 13, 5, 9, 500001000));
                p.setObject(8, LocalDate.of(1999, 12, 31));
                p.setString(9, "héllo ☃");
                p.setBytes(10, blob);
                p.executeUpdate();
            }
            try (PreparedStatement p = c.prepareStatement("SELECT * FROM t WHERE id = ?")) {
                p.setInt(1, 1);
                try (ResultSet r = p.executeQuery()) {
                    check(r.next(), "a row");
                    eq(r.getObject(1), 1, "INT");
                    eq(r.getObject(2), Long.MIN_VALUE, "BIGINT");
                    eq(r.getObject(3), new BigInteger("18446744073709551615"), "BIGINT UNSIGNED");
                    eq(r.getObject(4), new BigDecimal("-12345678.1234"), "DECIMAL");
                    eq(r.getObject(5), 2.5, "DOUBLE");
                    eq(r.getObject(6), LocalDateTime.of(2024, 2, 29, 13, 5, 9), "DATETIME");
                    eq(r.getObject(7, LocalDateTime.class), LocalDateTime.of(2024, 2, 29, 13, 5, 9, 500001000), "DATETIME(6)");
                    eq(r.getObject(8, LocalDate.class), LocalDate.of(1999, 12, 31), "DATE");
                    eq(r.getObject(9), "héllo ☃", "VARCHAR");
                    check(Arrays.equals(r.getBytes(10), blob), "BLOB bytes");
                    ResultSetMetaData m = r.getMetaData();
                    List<String> names = new ArrayList<>();
                    for (int i = 1; i <= m.getColumnCount(); i++) names.add(m.getColumnTypeName(i));
                    eq(String.join(" ", names), "INT BIGINT BIGINT UNSIGNED DECIMAL DOUBLE DATETIME DATETIME DATE VARCHAR BLOB", "column types");
                    eq(m.isNullable(1), ResultSetMetaData.columnNoNulls, "the key is NOT NULL");
                    eq(m.getTableName(1), "t", "table name");
                    eq(m.getScale(4), 4, "DECIMAL scale");
                }
            }
        });
        cases.put("expressions are typed as MySQL types them", (c, mode) -> {
            try (PreparedStatement p = c.prepareStatement("SELECT 1, 2.5, NOW(), CURDATE(), COUNT(*), 'x', 7 / 2 WHERE 1 = ?")) {
                p.setInt(1, 1);
                try (ResultSet r = p.executeQuery()) {
                    check(r.next(), "a row");
                    eq(r.getObject(1), 1L, "1");
                    eq(r.getObject(2), new BigDecimal("2.5"), "2.5");
                    check(r.getObject(3) instanceof LocalDateTime, "NOW() is a LocalDateTime: " + r.getObject(3));
                    check(r.getObject(4) instanceof java.sql.Date, "CURDATE() is a Date: " + r.getObject(4));
                    eq(r.getObject(5), 1L, "COUNT(*)");
                    eq(r.getObject(6), "x", "'x'");
                    eq(r.getObject(7), new BigDecimal("3.5000"), "7 / 2");
                }
            }
        });
        cases.put("prepared statements and batches run again", (c, mode) -> {
            exec(c, "CREATE TABLE p (id INT PRIMARY KEY, name VARCHAR(10))");
            try (PreparedStatement p = c.prepareStatement("INSERT INTO p VALUES (?, ?)")) {
                for (int i = 0; i < 100; i++) {
                    p.setInt(1, i);
                    p.setString(2, "n" + i);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                eq(counts.length, 100, "batch counts");
            }
            try (PreparedStatement p = c.prepareStatement("SELECT name FROM p WHERE id = ?")) {
                for (int i : new int[] {3, 1, 4, 1, 59}) {
                    p.setInt(1, i);
                    try (ResultSet r = p.executeQuery()) {
                        check(r.next(), "row " + i);
                        eq(r.getString(1), "n" + i, "name");
                    }
                }
            }
        });
        cases.put("transactions commit, roll back and take isolation levels", (c, mode) -> {
            exec(c, "CREATE TABLE acct (id INT PRIMARY KEY, bal INT)");
            exec(c, "INSERT INTO acct VALUES (1, 100)");
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            eq(c.getTransactionIsolation(), Connection.TRANSACTION_READ_COMMITTED, "isolation");
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            c.setAutoCommit(false);
            exec(c, "UPDATE acct SET bal = bal - 10 WHERE id = 1");
            c.rollback();
            exec(c, "UPDATE acct SET bal = bal - 10 WHERE id = 1");
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT bal FROM acct")) {
                check(r.next(), "a row");
                eq(r.getInt(1), 90, "balance");
            }
        });
        cases.put("errors carry MySQL codes", (c, mode) -> {
            exec(c, "CREATE TABLE e (id INT PRIMARY KEY)");
            exec(c, "INSERT INTO e VALUES (1)");
            eq(errorCode(c, "INSERT INTO e VALUES (?)", 1), 1062, "duplicate key");
            eq(errorCode(c, "SELECT * FROM missing WHERE 1 = ?", 1), 1146, "no such table");
            eq(errorCode(c, "SELECT nope FROM e WHERE 1 = ?", 1), 1054, "no such column");
        });
        cases.put("large values and streamed rows", (c, mode) -> {
            exec(c, "CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)");
            byte[] blob = new byte[1 << 20];
            for (int i = 0; i < blob.length; i++) blob[i] = (byte) (i * 31);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO big VALUES (1, ?)")) {
                p.setBytes(1, blob);
                p.executeUpdate();
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT b FROM big")) {
                check(r.next(), "a row");
                check(Arrays.equals(r.getBytes(1), blob), "1 MiB blob");
            }
            exec(c, "CREATE TABLE s (id INT PRIMARY KEY)");
            StringBuilder values = new StringBuilder("INSERT INTO s VALUES (0)");
            for (int i = 1; i < 5000; i++) values.append(", (").append(i).append(")");
            exec(c, values.toString());
            try (Statement s = c.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_READ_ONLY)) {
                s.setFetchSize(Integer.MIN_VALUE); // Connector/J's streaming mode
                try (ResultSet r = s.executeQuery("SELECT id FROM s ORDER BY id")) {
                    int n = 0;
                    while (r.next()) eq(r.getInt(1), n++, "row");
                    eq(n, 5000, "rows");
                }
            }
        });
        cases.put("cursor fetch reads a result in pieces; changeUser logs another account in", (c, mode) -> {
            exec(c, "CREATE TABLE cur (id INT PRIMARY KEY)");
            StringBuilder values = new StringBuilder("INSERT INTO cur VALUES (0)");
            for (int i = 1; i < 100; i++) values.append(", (").append(i).append(")");
            exec(c, values.toString());
            // useCursorFetch: COM_STMT_EXECUTE opens a cursor, COM_STMT_FETCH reads 7 rows at a time.
            String url = "jdbc:mysql://127.0.0.1:" + PORT + "/" + c.getCatalog()
                    + "?useCursorFetch=true&" + TLS + "&allowPublicKeyRetrieval=true";
            try (Connection cc = DriverManager.getConnection(url, "root", "");
                 PreparedStatement p = cc.prepareStatement("SELECT id FROM cur WHERE id >= ? ORDER BY id")) {
                p.setFetchSize(7);
                for (int from : new int[] {10, 95}) {
                    p.setInt(1, from);
                    try (ResultSet r = p.executeQuery()) {
                        int n = from;
                        while (r.next()) eq(r.getInt(1), n++, "row");
                        eq(n, 100, "rows from " + from);
                    }
                }
                try (Statement s = cc.createStatement();
                     ResultSet r = s.executeQuery("SHOW SESSION STATUS LIKE 'Com_stmt_fetch'")) {
                    check(r.next(), "the counter");
                    check(r.getInt(2) >= 14, "fetched 7 rows at a time, " + r.getInt(2) + " fetches");
                }
            }
            exec(c, "DROP USER IF EXISTS jchanged");
            exec(c, "CREATE USER jchanged IDENTIFIED BY 'pw'");
            // changeUser keeps the connection's database: the account needs a privilege there.
            exec(c, "GRANT SELECT ON " + c.getCatalog() + ".* TO jchanged");
            c.unwrap(com.mysql.cj.jdbc.JdbcConnection.class).changeUser("jchanged", "pw");
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT CURRENT_USER()")) {
                check(r.next(), "a row");
                eq(r.getString(1), "jchanged@%", "user after changeUser");
            }
        });
        cases.put("DatabaseMetaData describes tables, columns and keys", (c, mode) -> {
            exec(c, "CREATE TABLE meta (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(30) NOT NULL, price DECIMAL(8,2), UNIQUE KEY name_u (name), KEY price_i (price))");
            DatabaseMetaData md = c.getMetaData();
            String db = c.getCatalog();
            try (ResultSet r = md.getTables(db, null, "meta", null)) {
                check(r.next(), "the table");
                eq(r.getString("TABLE_TYPE"), "TABLE", "table type");
            }
            List<String> columns = new ArrayList<>();
            try (ResultSet r = md.getColumns(db, null, "meta", null)) {
                while (r.next())
                    columns.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME") + ":" + r.getInt("COLUMN_SIZE") + ":" + r.getInt("NULLABLE") + ":" + r.getString("IS_AUTOINCREMENT"));
            }
            eq(String.join(" ", columns), "id:BIGINT:19:0:YES name:VARCHAR:30:0:NO price:DECIMAL:8:1:NO", "columns");
            try (ResultSet r = md.getPrimaryKeys(db, null, "meta")) {
                check(r.next(), "a primary key");
                eq(r.getString("COLUMN_NAME"), "id", "primary key column");
            }
            List<String> indexes = new ArrayList<>();
            try (ResultSet r = md.getIndexInfo(db, null, "meta", false, false)) {
                while (r.next()) indexes.add(r.getString("INDEX_NAME") + ":" + r.getBoolean("NON_UNIQUE"));
            }
            Collections.sort(indexes);
            eq(String.join(" ", indexes), "PRIMARY:false name_u:false price_i:true", "indexes");
        });

        int failures = 0;
        for (String mode : MODES.keySet()) {
            String db = "java_" + mode.replace('-', '_');
            try (Connection admin = connect("", mode)) {
                exec(admin, "DROP DATABASE IF EXISTS " + db);
                exec(admin, "CREATE DATABASE " + db);
            }
            for (Map.Entry<String, Case> e : cases.entrySet()) {
                try (Connection c = connect(db, mode)) {
                    e.getValue().run(c, mode);
                    System.out.println("PASS [" + mode + "] " + e.getKey());
                } catch (Throwable t) {
                    failures++;
                    System.out.println("FAIL [" + mode + "] " + e.getKey() + ": " + t);
                }
            }
        }
        System.out.println((cases.size() * MODES.size() - failures) + " passed, " + failures + " failed");
        System.exit(Math.min(failures, 100));
    }
}
