//! A real pd, kv and sql node, driven by the `mysql` command-line client: DDL, DML, queries,
//! transactions and MySQL's error codes, as a user at the prompt would see them.

mod common;

use common::SqlCluster as Cluster;

#[test]
fn tables_rows_and_queries_through_the_mysql_client() {
    let c = Cluster::start();
    c.run("", "CREATE DATABASE shop");
    c.run(
        "shop",
        "CREATE TABLE items (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20) NOT NULL, \
         price INT NOT NULL DEFAULT 0, stock INT, UNIQUE KEY name_u (name), KEY price_i (price))",
    );
    // LAST_INSERT_ID() is the connection's: asked in the same session as the INSERT.
    assert_eq!(
        c.run(
            "shop",
            "INSERT INTO items (name, price, stock) VALUES ('apple', 3, 10), ('pear', 4, NULL), \
             ('plum', 3, 7), ('fig', 9, 1); SELECT LAST_INSERT_ID()",
        ),
        "LAST_INSERT_ID()\n1\n"
    );
    assert_eq!(
        c.run(
            "shop",
            "SELECT id, name, price, stock FROM items ORDER BY id"
        ),
        "id\tname\tprice\tstock\n1\tapple\t3\t10\n2\tpear\t4\tNULL\n3\tplum\t3\t7\n4\tfig\t9\t1\n"
    );
    assert_eq!(
        c.run("shop", "SELECT price, COUNT(*), SUM(stock) FROM items GROUP BY price HAVING COUNT(*) > 0 ORDER BY price DESC"),
        "price\tCOUNT(*)\tSUM(stock)\n9\t1\t1\n4\t1\tNULL\n3\t2\t17\n"
    );
    assert_eq!(
        c.run("shop", "SELECT name FROM items WHERE id BETWEEN 2 AND 4 AND name LIKE 'p%' ORDER BY name DESC LIMIT 1"),
        "name\nplum\n"
    );
    assert_eq!(
        c.run(
            "shop",
            "SELECT COUNT(*) FROM items WHERE stock IS NULL OR price > 5"
        ),
        "COUNT(*)\n2\n"
    );
    c.run(
        "shop",
        "UPDATE items SET price = price * 2, stock = IFNULL(stock, 0) + 1 WHERE price = 3",
    );
    assert_eq!(
        c.run(
            "shop",
            "SELECT name, price, stock FROM items WHERE price = 6 ORDER BY name"
        ),
        "name\tprice\tstock\napple\t6\t11\nplum\t6\t8\n"
    );
    c.run("shop", "DELETE FROM items WHERE id IN (2, 4)");
    assert_eq!(
        c.run("shop", "SELECT COUNT(*), MIN(id), MAX(id) FROM items"),
        "COUNT(*)\tMIN(id)\tMAX(id)\n2\t1\t3\n"
    );
    // REPLACE and ON DUPLICATE KEY UPDATE on the unique name.
    c.run("shop", "INSERT INTO items (name, price) VALUES ('apple', 1) ON DUPLICATE KEY UPDATE price = price + 100");
    assert_eq!(
        c.run("shop", "SELECT price FROM items WHERE name = 'apple'"),
        "price\n106\n"
    );
    c.run(
        "shop",
        "REPLACE INTO items (id, name, price) VALUES (10, 'plum', 5)",
    );
    assert_eq!(
        c.run("shop", "SELECT id, price FROM items WHERE name = 'plum'"),
        "id\tprice\n10\t5\n"
    );
    // An index added to a table with rows is filled in, and a unique one refuses duplicates.
    c.run("shop", "CREATE UNIQUE INDEX stock_u ON items (stock)");
    // The message names the index that clashed, not the table's first unique one (name_u).
    c.fails(
        "shop",
        "INSERT INTO items (name, stock) VALUES ('kiwi', 11)",
        "1062 (23000) at line 1: Duplicate entry '11' for key 'items.stock_u'",
    );
    // INSERT IGNORE skips the row with the same error as a warning.
    assert_eq!(
        c.run(
            "shop",
            "INSERT IGNORE INTO items (name, stock) VALUES ('kiwi', 11); SHOW WARNINGS"
        ),
        "Level\tCode\tMessage\nWarning\t1062\tDuplicate entry '11' for key 'items.stock_u'\n"
    );
    c.run("shop", "DROP INDEX stock_u ON items");
    c.run(
        "shop",
        "INSERT INTO items (name, stock) VALUES ('kiwi', 11)",
    );
    assert!(c.run("shop", "SHOW TABLES").contains("items"));
    assert_eq!(
        c.run("shop", "SHOW COLUMNS FROM items"),
        "Field\tType\tNull\tKey\tDefault\tExtra\n\
         id\tbigint\tNO\tPRI\tNULL\tauto_increment\n\
         name\tvarchar(20)\tNO\tUNI\tNULL\t\n\
         price\tint\tNO\tMUL\t0\t\n\
         stock\tint\tYES\t\tNULL\t\n"
    );
    assert_eq!(c.run("shop", "SHOW WARNINGS"), "");
    assert!(
        c.run("shop", "SHOW CREATE TABLE items")
            .contains("UNIQUE KEY `name_u` (`name`)")
    );
    c.run("shop", "TRUNCATE TABLE items");
    assert_eq!(c.run("shop", "SELECT COUNT(*) FROM items"), "COUNT(*)\n0\n");
    c.run("", "DROP DATABASE shop");
    c.fails("", "USE shop", "1049 (42000)");
}

#[test]
fn transactions_and_errors_as_mysql_reports_them() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE bank; CREATE TABLE bank.acct (id INT PRIMARY KEY, bal INT NOT NULL)",
    );
    c.run("bank", "INSERT INTO acct VALUES (1, 100), (2, 50)");
    // Rolled back writes vanish; committed ones stay; a txn reads its own writes.
    assert_eq!(
        c.run("bank", "BEGIN; UPDATE acct SET bal = bal - 30 WHERE id = 1; SELECT bal FROM acct WHERE id = 1; ROLLBACK"),
        "bal\n70\n"
    );
    assert_eq!(
        c.run("bank", "SELECT bal FROM acct WHERE id = 1"),
        "bal\n100\n"
    );
    c.run("bank", "BEGIN; UPDATE acct SET bal = bal - 30 WHERE id = 1; UPDATE acct SET bal = bal + 30 WHERE id = 2; COMMIT");
    assert_eq!(
        c.run("bank", "SELECT SUM(bal) FROM acct"),
        "SUM(bal)\n150\n"
    );
    assert_eq!(c.run("bank", "SET autocommit = 0; INSERT INTO acct VALUES (3, 1); ROLLBACK; SELECT COUNT(*) FROM acct"), "COUNT(*)\n2\n");
    assert_eq!(
        c.run(
            "bank",
            "SET tidb_txn_mode = 'optimistic'; BEGIN; SELECT @@tidb_txn_mode; COMMIT"
        ),
        "@@tidb_txn_mode\noptimistic\n"
    );

    c.fails("bank", "INSERT INTO acct VALUES (1, 5)", "1062 (23000)");
    c.fails("bank", "SELECT * FROM nothere", "1146 (42S02)");
    c.fails("bank", "SELEKT 1", "1064 (42000)");
    c.fails("bank", "INSERT INTO acct VALUES (9, NULL)", "1048 (23000)");
    c.fails(
        "bank",
        "INSERT INTO acct VALUES (9999999999, 1)",
        "1264 (22003)",
    );
    c.fails("bank", "INSERT INTO acct VALUES ('x', 1)", "1366 (HY000)");
    c.fails("bank", "INSERT INTO acct VALUES (9)", "1136 (21S01)");
    c.fails("bank", "SELECT nope FROM acct", "1054 (42S22)");
    c.fails("bank", "SELECT 9223372036854775807 + 1", "1690 (22003)");
    c.fails("bank", "SET @@nonsense = 1", "1193 (HY000)");
    c.fails("", "SELECT * FROM acct", "1046 (3D000)");
    c.fails("bank", "CREATE TABLE acct (x INT)", "1050 (42S01)");
    assert_eq!(
        c.run("bank", "SELECT 1 / 0, 7 DIV 2, -7 % 2"),
        "1 / 0\t7 DIV 2\t-7 % 2\nNULL\t3\t-1\n"
    );
    // A failed statement inside a txn leaves nothing behind; the rest of the txn commits.
    assert_eq!(
        c.run_force(
            "bank",
            "BEGIN;\nINSERT INTO acct VALUES (5, 5);\nINSERT INTO acct VALUES (6, 6), (1, 1);\n\
             COMMIT;\nSELECT id FROM acct WHERE id > 2 ORDER BY id;\n"
        ),
        "id\n5\n"
    );
    c.run("bank", "DELETE FROM acct WHERE id = 5");
    // Turning autocommit back on commits the open txn.
    assert_eq!(
        c.run("bank", "SET autocommit = 0; INSERT INTO acct VALUES (7, 7); SET autocommit = 1; ROLLBACK; SELECT COUNT(*) FROM acct WHERE id = 7"),
        "COUNT(*)\n1\n"
    );
    c.run("bank", "DELETE FROM acct WHERE id = 7");
    // The connection survives every error: the last statement of a failing batch is reached.
    assert_eq!(c.run("bank", "SELECT COUNT(*) FROM acct"), "COUNT(*)\n2\n");
}

#[test]
fn joins_inner_left_and_comma() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE j; CREATE TABLE j.c (id INT PRIMARY KEY, name VARCHAR(10)); \
         CREATE TABLE j.o (id INT PRIMARY KEY, cid INT, amt INT, KEY cid_i (cid))",
    );
    c.run(
        "j",
        "INSERT INTO c VALUES (1, 'ann'), (2, 'bob'), (3, 'cy'); \
         INSERT INTO o VALUES (10, 1, 5), (11, 1, 7), (12, 2, 1), (13, 9, 4)",
    );
    assert_eq!(
        c.run("j", "SELECT c.name, SUM(o.amt) FROM c JOIN o ON o.cid = c.id GROUP BY c.name ORDER BY c.name"),
        "name\tSUM(o.amt)\nann\t12\nbob\t1\n"
    );
    assert_eq!(
        c.run(
            "j",
            "SELECT c.name, o.id FROM c LEFT JOIN o ON o.cid = c.id WHERE c.id >= 2 ORDER BY c.name"
        ),
        "name\tid\nbob\t12\ncy\tNULL\n"
    );
    assert_eq!(
        c.run(
            "j",
            "SELECT COUNT(*) FROM c, o WHERE c.id = o.cid AND o.amt > 4"
        ),
        "COUNT(*)\n2\n"
    );
    assert_eq!(
        c.run(
            "j",
            "SELECT x.name, y.id FROM c x, o y WHERE y.cid = x.id AND y.amt < 6 ORDER BY y.id"
        ),
        "name\tid\nann\t10\nbob\t12\n"
    );
    assert_eq!(
        c.run(
            "j",
            "SELECT id FROM o WHERE (cid, amt) IN ((1, 7), (2, 1), (2, 5)) ORDER BY id"
        ),
        "id\n11\n12\n"
    );
    // Derived tables, alone and joined.
    assert_eq!(
        c.run(
            "j",
            "SELECT COUNT(*) FROM (SELECT cid, SUM(amt) s FROM o GROUP BY cid) t WHERE s > 3"
        ),
        "COUNT(*)\n2\n"
    );
    assert_eq!(
        c.run(
            "j",
            "SELECT c.name, t.s, POWER(t.s, 2) p FROM c, (SELECT cid, SUM(amt) s FROM o GROUP BY cid) t \
             WHERE t.cid = c.id ORDER BY c.name"
        ),
        "name\ts\tp\nann\t12\t144\nbob\t1\t1\n"
    );
    c.fails("j", "SELECT * FROM (SELECT 1)", "1248 (42000)");
    c.fails("j", "SELECT id FROM c, o", "1052 (23000)");
}

#[test]
fn decimals_are_exact() {
    let c = Cluster::start();
    c.run("", "CREATE DATABASE d; CREATE TABLE d.acct (id INT PRIMARY KEY, bal DECIMAL(10,2) NOT NULL DEFAULT 0.00)");
    c.run(
        "d",
        "INSERT INTO acct VALUES (1, '12.345'), (2, 0.1), (3, 0.2), (4, 7)",
    );
    assert_eq!(
        c.run("d", "SELECT id, bal FROM acct ORDER BY id"),
        "id\tbal\n1\t12.35\n2\t0.10\n3\t0.20\n4\t7.00\n"
    );
    assert_eq!(
        c.run(
            "d",
            "SELECT SUM(bal), AVG(bal) FROM acct WHERE id IN (2, 3)"
        ),
        "SUM(bal)\tAVG(bal)\n0.30\t0.150000\n"
    );
    assert_eq!(
        c.run("d", "SELECT 0.1 + 0.2, 1 / 3, 2.50 * 2"),
        "0.1 + 0.2\t1 / 3\t2.50 * 2\n0.3\t0.3333\t5.00\n"
    );
    c.run("d", "UPDATE acct SET bal = bal - 0.05 WHERE id = 1");
    assert_eq!(
        c.run(
            "d",
            "SELECT bal FROM acct WHERE bal > 12.29 AND bal < 12.31"
        ),
        "bal\n12.30\n"
    );
    c.fails(
        "d",
        "INSERT INTO acct VALUES (5, 123456789.00)",
        "1264 (22003)",
    );
}

#[test]
fn dates_and_times() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE t; CREATE TABLE t.ev (id INT PRIMARY KEY, d DATE, at DATETIME, \
         made DATETIME DEFAULT CURRENT_TIMESTAMP, KEY at_i (at))",
    );
    c.run("t", "INSERT INTO ev (id, d, at) VALUES (1, '2024-2-29', '2024-03-01 08:00:00'), (2, 20240101, '2023-12-31 23:59:59')");
    assert_eq!(
        c.run(
            "t",
            "SELECT id, d, at FROM ev WHERE at >= '2024-01-01' ORDER BY at"
        ),
        "id\td\tat\n1\t2024-02-29\t2024-03-01 08:00:00\n"
    );
    assert_eq!(
        c.run(
            "t",
            "SELECT COUNT(*) FROM ev WHERE made <= NOW() AND made > '2020-01-01'"
        ),
        "COUNT(*)\n2\n"
    );
    c.fails(
        "t",
        "INSERT INTO ev (id, d) VALUES (3, '2023-02-29')",
        "1292 (22007)",
    );
}

#[test]
fn accounts_log_in_with_their_passwords() {
    let c = Cluster::start();
    c.run("", "CREATE USER 'sb'@'%' IDENTIFIED BY 'pw1'");
    assert_eq!(c.try_run_as("sb", "pw1", "SELECT 1").unwrap(), "1\n1\n");
    let denied = c.try_run_as("sb", "nope", "SELECT 1").unwrap_err();
    assert!(denied.contains("ERROR 1045"), "{denied}");
    c.fails("", "CREATE USER sb", "1396 (HY000)");
    c.fails("", "ALTER USER nobody IDENTIFIED BY 'x'", "1396 (HY000)");
    c.run("", "ALTER USER sb IDENTIFIED BY 'pw2'");
    assert!(c.try_run_as("sb", "pw1", "SELECT 1").is_err());
    assert_eq!(
        c.try_run_as("sb", "pw2", "SELECT USER()").unwrap(),
        "USER()\nsb@%\n"
    );
    c.run("", "DROP USER sb; DROP USER IF EXISTS sb");
    c.fails("", "DROP USER root", "1396 (HY000)");
    let gone = c.try_run_as("sb", "pw2", "SELECT 1").unwrap_err();
    assert!(gone.contains("ERROR 1045"), "{gone}");
    // Once root has a password, the empty one no longer logs in.
    c.run("", "ALTER USER root@'%' IDENTIFIED BY 'rootpw'");
    assert!(
        c.try_run("", "SELECT 1")
            .unwrap_err()
            .contains("ERROR 1045")
    );
    assert!(c.try_run_as("root", "rootpw", "SELECT 1").is_ok());
}

/// Runs `sql` as `user` (password `pw`) in `db`: Ok with the output, or the error's
/// "code (state)".
fn as_user(c: &Cluster, user: &str, db: &str, sql: &str) -> Result<String, String> {
    c.try_run_with(
        db,
        sql,
        &["-u", user, "--password=pw", "--skip-column-names"],
    )
    .map_err(|e| {
        // "ERROR 1142 (42000) at line 1: message" as "1142 (42000): message".
        let error = e.split("ERROR ").nth(1).unwrap_or(&e);
        error.replacen(" at line 1", "", 1)
    })
}

#[test]
fn privileges_allow_and_refuse_each_statement_kind() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE shop; CREATE DATABASE hr; \
         CREATE TABLE shop.items (id INT PRIMARY KEY, n INT); \
         CREATE TABLE shop.orders (id INT PRIMARY KEY); \
         CREATE TABLE hr.pay (id INT PRIMARY KEY, amount INT); \
         INSERT INTO shop.items VALUES (1, 10); INSERT INTO hr.pay VALUES (1, 100); \
         CREATE USER app IDENTIFIED BY 'pw', bob IDENTIFIED BY 'pw'",
    );
    // (what root grants or revokes first, the statement app runs, its outcome: the output
    // or the error code that MySQL gives).
    let ok = |out: &str| Ok::<String, String>(out.to_string());
    let no = |code: &str| Err::<String, String>(code.to_string());
    let cases: &[(&str, &str, Result<String, String>)] = &[
        ("", "SHOW GRANTS", ok("GRANT USAGE ON *.* TO `app`@`%`\n")),
        (
            "",
            "SELECT n FROM shop.items",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'items'"),
        ),
        ("", "SHOW DATABASES", ok("information_schema\n")),
        (
            "",
            "USE shop",
            no("1044 (42000): Access denied for user 'app'@'%' to database 'shop'"),
        ),
        (
            "",
            "CREATE DATABASE x",
            no("1044 (42000): Access denied for user 'app'@'%' to database 'x'"),
        ),
        (
            "",
            "CREATE USER carol",
            no(
                "1227 (42000): Access denied; you need (at least one of) the CREATE USER privilege(s) for this operation",
            ),
        ),
        ("", "ALTER USER app IDENTIFIED BY 'pw'", ok("")),
        (
            "",
            "SET GLOBAL tidb_txn_mode = 'optimistic'",
            no(
                "1227 (42000): Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation",
            ),
        ),
        (
            "",
            "SET CONFIG kv `raftstore.store-pool-size` = 2",
            no(
                "1227 (42000): Access denied; you need (at least one of) the CONFIG privilege(s) for this operation",
            ),
        ),
        (
            "",
            "SELECT 1 INTO OUTFILE '/tmp/atoll-denied.txt'",
            no(
                "1227 (42000): Access denied; you need (at least one of) the FILE privilege(s) for this operation",
            ),
        ),
        (
            "",
            "SHOW GRANTS FOR root",
            no("1044 (42000): Access denied for user 'app'@'%' to database 'mysql'"),
        ),
        (
            "",
            "PREPARE s FROM 'SELECT amount FROM hr.pay'",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'"),
        ),
        (
            "GRANT SELECT ON shop.* TO app",
            "SELECT n FROM shop.items",
            ok("10\n"),
        ),
        ("", "SHOW DATABASES", ok("information_schema\nshop\n")),
        (
            "",
            "SELECT TABLE_NAME FROM information_schema.tables WHERE TABLE_SCHEMA <> 'information_schema' ORDER BY 1",
            ok("items\norders\n"),
        ),
        ("", "USE shop", ok("")),
        (
            "",
            "SELECT amount FROM hr.pay",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'"),
        ),
        (
            "",
            "SELECT n FROM shop.items WHERE id IN (SELECT id FROM hr.pay)",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'"),
        ),
        (
            "",
            "DESCRIBE hr.pay",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'"),
        ),
        (
            "",
            "SHOW CREATE TABLE hr.pay",
            no("1142 (42000): SHOW command denied to user 'app'@'%' for table 'pay'"),
        ),
        (
            "",
            "INSERT INTO shop.items VALUES (2, 20)",
            no("1142 (42000): INSERT command denied to user 'app'@'%' for table 'items'"),
        ),
        (
            "",
            "DELETE FROM shop.items",
            no("1142 (42000): DELETE command denied to user 'app'@'%' for table 'items'"),
        ),
        (
            "",
            "CREATE TABLE shop.t (id INT PRIMARY KEY)",
            no("1142 (42000): CREATE command denied to user 'app'@'%' for table 't'"),
        ),
        (
            "",
            "DROP TABLE shop.orders",
            no("1142 (42000): DROP command denied to user 'app'@'%' for table 'orders'"),
        ),
        (
            "",
            "GRANT SELECT ON shop.* TO bob",
            no("1044 (42000): Access denied for user 'app'@'%' to database 'shop'"),
        ),
        (
            "GRANT INSERT, UPDATE ON shop.items TO app",
            "INSERT INTO shop.items VALUES (2, 20)",
            ok(""),
        ),
        ("", "UPDATE shop.items SET n = n + 1 WHERE id = 2", ok("")),
        (
            "",
            "UPDATE shop.orders SET id = 5",
            no("1142 (42000): UPDATE command denied to user 'app'@'%' for table 'orders'"),
        ),
        (
            "",
            "SHOW GRANTS",
            ok(
                "GRANT USAGE ON *.* TO `app`@`%`\nGRANT SELECT ON `shop`.* TO `app`@`%`\nGRANT INSERT, UPDATE ON `shop`.`items` TO `app`@`%`\n",
            ),
        ),
        (
            "GRANT ALL ON shop.* TO app WITH GRANT OPTION",
            "CREATE TABLE shop.t (id INT PRIMARY KEY)",
            ok(""),
        ),
        ("", "CREATE INDEX i ON shop.t (id)", ok("")),
        ("", "DROP TABLE shop.t", ok("")),
        ("", "GRANT SELECT ON shop.* TO bob", ok("")),
        (
            "",
            "GRANT SELECT ON hr.* TO bob",
            no("1044 (42000): Access denied for user 'app'@'%' to database 'hr'"),
        ),
        (
            "",
            "GRANT SELECT ON *.* TO bob",
            no("1045 (28000): Access denied for user 'app'@'%' (using password: YES)"),
        ),
        (
            "REVOKE ALL ON shop.* FROM app",
            "DELETE FROM shop.items WHERE id = 2",
            no("1142 (42000): DELETE command denied to user 'app'@'%' for table 'items'"),
        ),
        (
            "",
            "SELECT n FROM shop.orders",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'orders'"),
        ),
        (
            "",
            "SELECT n FROM shop.items WHERE id = 2",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'items'"),
        ),
        // A CTE named like a table does not stand in for it in its own query.
        (
            "",
            "USE shop; WITH orders AS (SELECT * FROM orders) SELECT * FROM orders",
            no("1142 (42000): SELECT command denied to user 'app'@'%' for table 'orders'"),
        ),
        (
            "GRANT SELECT ON *.* TO app",
            "SELECT amount FROM hr.pay",
            ok("100\n"),
        ),
        (
            "",
            "SHOW GRANTS FOR bob",
            ok("GRANT USAGE ON *.* TO `bob`@`%`\nGRANT SELECT ON `shop`.* TO `bob`@`%`\n"),
        ),
        (
            "GRANT CREATE USER, SYSTEM_VARIABLES_ADMIN ON *.* TO app",
            "CREATE USER carol",
            ok(""),
        ),
        ("", "SET GLOBAL tidb_slow_log_threshold = 300", ok("")),
        // root holds SYSTEM_USER: CREATE USER alone does not reach it.
        (
            "",
            "ALTER USER root IDENTIFIED BY 'x'",
            no(
                "1227 (42000): Access denied; you need (at least one of) the SYSTEM_USER privilege(s) for this operation",
            ),
        ),
        (
            "GRANT FILE ON *.* TO app",
            "SELECT 1 INTO OUTFILE '/dev/null'",
            no("1086 (HY000): File '/dev/null' already exists"),
        ),
        // REVOKE ALL ON *.* takes the dynamic privileges too.
        (
            "REVOKE ALL ON *.* FROM app",
            "SET GLOBAL tidb_slow_log_threshold = 300",
            no(
                "1227 (42000): Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation",
            ),
        ),
    ];
    for (by_root, statement, expected) in cases {
        if !by_root.is_empty() {
            c.run("", by_root);
        }
        assert_eq!(
            &as_user(&c, "app", "", statement),
            expected,
            "{statement} after {by_root:?}"
        );
    }
    // MySQL's grant tables show the same, to those who may read them.
    assert_eq!(
        as_user(&c, "bob", "", "SELECT User FROM mysql.user"),
        Err("1142 (42000): SELECT command denied to user 'bob'@'%' for table 'user'".into())
    );
    assert_eq!(
        c.run(
            "mysql",
            "SELECT User, Select_priv, Create_user_priv, account_locked FROM user ORDER BY User"
        ),
        "User\tSelect_priv\tCreate_user_priv\taccount_locked\n\
         app\tN\tN\tN\nbob\tN\tN\tN\ncarol\tN\tN\tN\nroot\tY\tY\tN\n"
    );
    assert_eq!(
        c.run(
            "",
            "SELECT Db, User, Select_priv, Insert_priv, Grant_priv FROM mysql.db"
        ),
        // REVOKE ALL left app the grant option on shop (ALL never includes it).
        "Db\tUser\tSelect_priv\tInsert_priv\tGrant_priv\n\
         shop\tapp\tN\tN\tY\nshop\tbob\tY\tN\tN\n"
    );
    assert_eq!(
        c.run(
            "",
            "SELECT Db, User, Table_name, Table_priv FROM mysql.tables_priv"
        ),
        "Db\tUser\tTable_name\tTable_priv\nshop\tapp\titems\tInsert,Update\n"
    );
    // Levels that cannot hold a privilege, and REVOKE of what was never granted.
    c.fails("", "GRANT FILE ON shop.* TO app", "1221 (HY000)");
    c.fails("", "GRANT EXECUTE ON shop.items TO app", "1144 (42000)");
    c.fails("", "GRANT SELECT ON *.* TO nobody", "1410 (42000)");
    c.fails("", "REVOKE SELECT ON hr.* FROM bob", "1141 (42000)");
    c.fails("", "REVOKE SELECT ON hr.pay FROM bob", "1147 (42000)");
    c.fails("", "GRANT NOPE ON *.* TO bob", "3929 (HY000)");
}

#[test]
fn column_privileges_allow_only_their_columns_and_show_only_them() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE hr; \
         CREATE TABLE hr.pay (id INT PRIMARY KEY, name VARCHAR(20), salary INT); \
         INSERT INTO hr.pay VALUES (1, 'ann', 100); \
         CREATE USER app IDENTIFIED BY 'pw'; \
         GRANT SELECT (id, name), UPDATE (name) ON hr.pay TO app",
    );
    let denied = |command: &str, column: &str| {
        Err(format!(
            "1143 (42000): {command} command denied to user 'app'@'%' for column '{column}' in table 'pay'"
        ))
    };
    let cases: &[(&str, Result<String, String>)] = &[
        (
            "SELECT id, name FROM pay ORDER BY name",
            Ok("1\tann\n".into()),
        ),
        ("SELECT COUNT(*) FROM pay", Ok("1\n".into())),
        ("SELECT name, salary FROM pay", denied("SELECT", "salary")),
        (
            "SELECT id FROM pay WHERE salary > 0",
            denied("SELECT", "salary"),
        ),
        (
            "SELECT * FROM pay",
            Err("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'".into()),
        ),
        ("UPDATE pay SET name = 'bo' WHERE id = 1", Ok("".into())),
        (
            "UPDATE pay SET salary = 0 WHERE id = 1",
            denied("UPDATE", "salary"),
        ),
        (
            "UPDATE pay SET nope.name = 'x' WHERE id = 1",
            Err("1054 (42S22): Unknown column 'nope.name' in 'field list'".into()),
        ),
        (
            "INSERT INTO pay (id) VALUES (2)",
            Err("1142 (42000): INSERT command denied to user 'app'@'%' for table 'pay'".into()),
        ),
        (
            "SHOW COLUMNS FROM pay",
            Ok("id\tint\tNO\tPRI\tNULL\t\nname\tvarchar(20)\tYES\t\tNULL\t\n".into()),
        ),
        (
            "SELECT COLUMN_NAME FROM information_schema.columns WHERE TABLE_NAME = 'pay' ORDER BY 1",
            Ok("id\nname\n".into()),
        ),
        (
            "SHOW GRANTS",
            Ok("GRANT USAGE ON *.* TO `app`@`%`\n\
                GRANT SELECT (`id`, `name`), UPDATE (`name`) ON `hr`.`pay` TO `app`@`%`\n"
                .into()),
        ),
    ];
    for (statement, expected) in cases {
        assert_eq!(
            &as_user(&c, "app", "hr", statement),
            expected,
            "{statement}"
        );
    }
    assert_eq!(
        c.run(
            "",
            "SELECT User, Table_name, Column_name, Column_priv FROM mysql.columns_priv; \
             SELECT Table_name, Table_priv, Column_priv FROM mysql.tables_priv"
        ),
        "User\tTable_name\tColumn_name\tColumn_priv\n\
         app\tpay\tid\tSelect\napp\tpay\tname\tSelect,Update\n\
         Table_name\tTable_priv\tColumn_priv\npay\t\tSelect,Update\n"
    );
    c.fails("", "GRANT SELECT (nope) ON hr.pay TO app", "1054 (42S22)");
    c.fails("", "GRANT SELECT (id) ON hr.* TO app", "1144 (42000)");
    c.fails("", "GRANT DELETE (id) ON hr.pay TO app", "1144 (42000)");
    c.fails(
        "",
        "REVOKE SELECT (salary) ON hr.pay FROM app",
        "1147 (42000)",
    );
    c.run("", "REVOKE SELECT (id) ON hr.pay FROM app");
    assert_eq!(
        as_user(&c, "app", "hr", "SELECT id FROM pay"),
        denied("SELECT", "id")
    );
    assert_eq!(
        as_user(&c, "app", "hr", "SELECT name FROM pay"),
        Ok("bo\n".into())
    );
}

#[test]
fn a_view_is_read_with_its_definers_rights_and_made_with_create_view() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE hr; CREATE TABLE hr.pay (id INT PRIMARY KEY, name VARCHAR(20), salary INT); \
         INSERT INTO hr.pay VALUES (1, 'ann', 100), (2, 'bob', 200); \
         CREATE VIEW hr.names AS SELECT id, name FROM pay; \
         CREATE USER app IDENTIFIED BY 'pw'; GRANT SELECT ON hr.names TO app",
    );
    let app = |sql: &str| as_user(&c, "app", "hr", sql);
    assert_eq!(
        app("SELECT name FROM names ORDER BY id"),
        Ok("ann\nbob\n".into())
    );
    assert_eq!(
        app("SELECT salary FROM pay"),
        Err("1142 (42000): SELECT command denied to user 'app'@'%' for table 'pay'".into())
    );
    assert!(
        app("CREATE VIEW mine AS SELECT id FROM names")
            .unwrap_err()
            .starts_with("1142 (42000): CREATE VIEW command denied")
    );
    c.run("", "GRANT CREATE VIEW ON hr.* TO app");
    assert_eq!(
        app("CREATE VIEW mine AS SELECT id FROM names"),
        Ok("".into())
    );
    // Its definer's rights, not app's: app may not read pay, yet the view may.
    assert!(
        app("CREATE VIEW sneaky AS SELECT salary FROM pay")
            .unwrap_err()
            .starts_with("1142")
    );
    assert!(app("DROP VIEW names").unwrap_err().starts_with("1142"));
    assert!(
        app("INSERT INTO names VALUES (3, 'cy')")
            .unwrap_err()
            .starts_with("1142")
    );
    assert_eq!(c.run("hr", "SELECT COUNT(*) FROM mine"), "COUNT(*)\n2\n");
    // Its definer's rights as they are when it is read: without SELECT on `names`, app's
    // view reads nothing, whoever asks.
    c.run("", "REVOKE SELECT ON hr.names FROM app");
    let e = c.try_run("hr", "SELECT COUNT(*) FROM mine").unwrap_err();
    assert!(e.contains("ERROR 1356"), "{e}");
}

#[test]
fn roles_lend_their_privileges_to_the_accounts_that_hold_them() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE shop; CREATE TABLE shop.items (id INT PRIMARY KEY); \
         INSERT INTO shop.items VALUES (1); CREATE ROLE reader, writer; \
         GRANT SELECT ON shop.* TO reader; GRANT INSERT ON shop.* TO writer; \
         CREATE USER app IDENTIFIED BY 'pw'; GRANT reader, writer TO app",
    );
    let app = |sql: &str| as_user(&c, "app", "", sql);
    // Granted but not active: nothing yet.
    assert_eq!(app("SELECT CURRENT_ROLE()"), Ok("NONE\n".into()));
    assert!(
        app("SELECT id FROM shop.items")
            .unwrap_err()
            .starts_with("1142")
    );
    assert_eq!(
        app("SET ROLE reader; SELECT CURRENT_ROLE(); SELECT id FROM shop.items"),
        Ok("`reader`@`%`\n1\n".into())
    );
    assert!(
        app("SET ROLE reader; INSERT INTO shop.items VALUES (2)")
            .unwrap_err()
            .starts_with("1142")
    );
    assert_eq!(
        app("SET ROLE ALL; INSERT INTO shop.items VALUES (2); SELECT COUNT(*) FROM shop.items"),
        Ok("2\n".into())
    );
    assert!(app("SET ROLE nobody").unwrap_err().starts_with("3530"));
    // Default roles are on at login.
    c.run("", "SET DEFAULT ROLE reader TO app");
    assert_eq!(app("SELECT COUNT(*) FROM shop.items"), Ok("2\n".into()));
    assert_eq!(
        app("SHOW GRANTS"),
        Ok(
            "GRANT USAGE ON *.* TO `app`@`%`\nGRANT `reader`@`%`,`writer`@`%` TO `app`@`%`\n"
                .into()
        )
    );
    // A role cannot log in; an account may not grant roles without ROLE_ADMIN.
    c.run("", "ALTER USER reader IDENTIFIED BY 'pw'");
    assert!(
        c.try_run_as("reader", "pw", "SELECT 1")
            .unwrap_err()
            .contains("3118")
    );
    assert!(app("GRANT writer TO app").unwrap_err().starts_with("1227"));
    c.fails("", "GRANT nosuchrole TO app", "3523 (HY000)");
    // Revoked or dropped, a role lends nothing.
    c.run("", "REVOKE reader FROM app");
    assert!(
        app("SELECT id FROM shop.items")
            .unwrap_err()
            .starts_with("1142")
    );
    c.run(
        "",
        "GRANT reader TO app; SET DEFAULT ROLE ALL TO app; DROP ROLE reader",
    );
    assert!(
        app("SELECT id FROM shop.items")
            .unwrap_err()
            .starts_with("1142")
    );
    assert_eq!(
        app("SHOW GRANTS"),
        Ok("GRANT USAGE ON *.* TO `app`@`%`\nGRANT `writer`@`%` TO `app`@`%`\n".into())
    );
    // WITH ADMIN OPTION: app may pass writer on, and take it back, but no other role.
    c.run(
        "",
        "CREATE ROLE auditor; CREATE USER bob IDENTIFIED BY 'pw'; \
         GRANT writer TO app WITH ADMIN OPTION",
    );
    assert_eq!(app("GRANT writer TO bob"), Ok("".into()));
    assert!(app("GRANT auditor TO bob").unwrap_err().starts_with("1227"));
    assert_eq!(
        c.run(
            "",
            "SELECT FROM_USER, TO_USER, WITH_ADMIN_OPTION FROM mysql.role_edges ORDER BY TO_USER"
        ),
        "FROM_USER\tTO_USER\tWITH_ADMIN_OPTION\nwriter\tapp\tY\nwriter\tbob\tN\n"
    );
    assert_eq!(
        app("SHOW GRANTS"),
        Ok(
            "GRANT USAGE ON *.* TO `app`@`%`\nGRANT `writer`@`%` TO `app`@`%` WITH ADMIN OPTION\n"
                .into()
        )
    );
    assert_eq!(app("REVOKE writer FROM bob"), Ok("".into()));
    // A role may not come to hold itself, directly or through others.
    c.run("", "GRANT writer TO auditor");
    c.fails("", "GRANT auditor TO writer", "3573 (HY000)");
    c.fails("", "GRANT writer TO writer", "3573 (HY000)");
    // A dropped role's admin option goes with it: a new role of the same name is not app's.
    c.run("", "DROP ROLE writer; CREATE ROLE writer");
    assert!(app("GRANT writer TO bob").unwrap_err().starts_with("1227"));
}

#[test]
fn a_revoke_holds_on_every_sql_node_once_it_returns() {
    let mut c = Cluster::start();
    let other = c.add_sql().to_string();
    c.run(
        "",
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); \
         CREATE USER app IDENTIFIED BY 'pw'; GRANT SELECT ON d.* TO app",
    );
    let on_other =
        |sql: &str| c.try_run_with("", sql, &["-P", &other, "-u", "app", "--password=pw"]);
    // The other node reads the grant (and caches it).
    assert!(on_other("SELECT COUNT(*) FROM d.t").is_ok());
    c.run("", "REVOKE SELECT ON d.* FROM app");
    let denied = on_other("SELECT COUNT(*) FROM d.t").unwrap_err();
    assert!(denied.contains("ERROR 1142"), "{denied}");
}

#[test]
fn slow_statements_reach_the_slow_log() {
    let c = Cluster::start();
    let log = c.sql_dir().join("tidb-slow.log");
    c.run("", "SELECT 'quick one'");
    // The threshold is the node's: set in one session, it holds for the next.
    c.run("", "SET tidb_slow_log_threshold = 0");
    assert_eq!(
        c.run("", "SELECT @@tidb_slow_log_threshold"),
        "@@tidb_slow_log_threshold\n0\n"
    );
    c.run("", "SELECT 'logged one'");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("# Query_time: ") && text.contains("SELECT 'logged one';"),
        "{text}"
    );
    assert!(!text.contains("quick one"), "{text}");
    c.fails("", "SET tidb_slow_log_threshold = 'soon'", "1232 (42000)");
}

#[test]
fn the_process_list_shows_each_connection_and_what_it_runs() {
    let c = Cluster::start();
    c.run("", "CREATE DATABASE p");
    let out = c.run("p", "SHOW FULL PROCESSLIST");
    let mine: Vec<&str> = out
        .lines()
        .find(|l| l.ends_with("SHOW FULL PROCESSLIST"))
        .unwrap_or_else(|| panic!("{out}"))
        .split('\t')
        .collect();
    assert_eq!(mine[1..5], ["root", "%", "p", "Query"], "{out}");
    assert!(
        out.starts_with("Id\tUser\tHost\tdb\tCommand\tTime\tState\tInfo\n"),
        "{out}"
    );
}

#[test]
fn knobs_take_effect_or_say_why_not() {
    let c = Cluster::start();
    assert_eq!(
        c.run(
            "",
            "SET tidb_replica_read = 'follower'; SHOW WARNINGS; SELECT @@tidb_replica_read"
        ),
        "Level\tCode\tMessage\nWarning\t1105\ttidb_replica_read is 'follower', but regions have no follower replicas yet: reads still go to the leader\n@@tidb_replica_read\nfollower\n"
    );
    c.fails("", "SET tidb_replica_read = 'nearest'", "1231 (42000)");
    // Concurrency knobs change how reads fan out, not what they return.
    c.run(
        "",
        "CREATE DATABASE k; CREATE TABLE k.t (id INT PRIMARY KEY, v INT, KEY v_i (v)); \
         INSERT INTO k.t VALUES (1, 10), (2, 20), (3, 10)",
    );
    assert_eq!(
        c.run(
            "k",
            "SET tidb_executor_concurrency = 1; SET tidb_distsql_scan_concurrency = 1; \
             SET GLOBAL tidb_committer_concurrency = 1; \
             SET GLOBAL tidb_tso_client_batch_max_wait_time = 0.5; \
             SELECT id FROM t WHERE v IN (10, 20) ORDER BY id; SELECT COUNT(*) FROM t"
        ),
        "id\n1\n2\n3\nCOUNT(*)\n3\n"
    );
}

#[test]
fn a_packet_over_max_allowed_packet_is_refused_and_the_server_carries_on() {
    use std::io::Write;
    let c = Cluster::start();
    // 65 MiB of statement: over the 64 MiB @@max_allowed_packet.
    let mut sql = b"SELECT LENGTH('".to_vec();
    sql.resize(sql.len() + (65 << 20), b'a');
    sql.extend_from_slice(b"');\n");
    let mut child = c
        .mysql()
        .arg("--max-allowed-packet=1G")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&sql);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    // The server answers 1153 and closes; a client still writing may see the close first
    // (2013 lost connection), as with MySQL. Either way the statement did not run.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("1153") || err.contains("2013") || err.contains("2006"),
        "{err}"
    );
    assert_eq!(c.run("", "SELECT 1 + 1"), "1 + 1\n2\n");
}

#[test]
fn set_global_is_seen_by_new_sessions_and_global_only_variables_need_it() {
    let c = Cluster::start();
    c.fails("", "SET tidb_gc_life_time = '20m'", "1229 (HY000)");
    c.fails("", "SET GLOBAL tidb_gc_life_time = '1m'", "1231 (42000)");
    c.fails("", "SET GLOBAL tidb_gc_enable = 'maybe'", "1231 (42000)");
    c.fails("", "SET GLOBAL version = 'x'", "1238 (HY000)");
    c.fails("", "SELECT @@session.tidb_gc_life_time", "1238 (HY000)");
    // SET GLOBAL leaves the session's own value alone (as in MySQL) ...
    assert_eq!(
        c.run(
            "",
            "SET GLOBAL tidb_gc_life_time = '20m'; SET GLOBAL tidb_txn_mode = 'optimistic'; \
             SET @@global.wait_timeout = 60; \
             SELECT @@tidb_gc_life_time, @@tidb_txn_mode, @@global.tidb_txn_mode, @@wait_timeout"
        ),
        "@@tidb_gc_life_time\t@@tidb_txn_mode\t@@global.tidb_txn_mode\t@@wait_timeout\n\
         20m\tpessimistic\toptimistic\t28800\n"
    );
    // ... and a new session starts from it (it is stored in KV for every sql node).
    assert_eq!(
        c.run(
            "",
            "SELECT @@tidb_txn_mode, @@wait_timeout, @@global.tidb_gc_life_time; \
             SHOW GLOBAL VARIABLES LIKE 'tidb_gc_l%'"
        ),
        "@@tidb_txn_mode\t@@wait_timeout\t@@global.tidb_gc_life_time\noptimistic\t60\t20m\n\
         Variable_name\tValue\ntidb_gc_life_time\t20m\n"
    );
}

#[test]
fn the_gc_leader_moves_the_safe_point_to_now_minus_the_life_time() {
    let c = Cluster::start();
    // On a new cluster the leader's first run is at once; the kv node reads PD's safe point
    // every 10 s and shows the one it collected up to on /metrics.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let safe_point = loop {
        let (_, body) = common::get(&format!("http://{}/metrics", c.kv_status));
        let metrics = String::from_utf8_lossy(&body).into_owned();
        let value = metrics
            .lines()
            .find_map(|l| l.strip_prefix("atoll_gc_safe_point "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if value > 0 {
            break value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the safe point never reached the kv node"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    // Physical milliseconds above 18 logical bits: about ten minutes (the default
    // tidb_gc_life_time) before now, give or take the time the test took.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let behind_ms = now_ms - (safe_point >> 18);
    assert!(
        (600_000..700_000).contains(&behind_ms),
        "the safe point is {behind_ms} ms behind now"
    );
}

#[test]
fn set_config_kv_changes_every_kv_node_and_reports_refusals_as_warnings() {
    let c = Cluster::start();
    let kv_config = || {
        let (_, body) = common::get(&format!("http://{}/config", c.kv_status));
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()
    };
    assert_eq!(
        c.run(
            "",
            "SET CONFIG kv `gc.max-write-bytes-per-sec` = '10MB'; SHOW WARNINGS"
        ),
        ""
    );
    assert_eq!(kv_config()["gc"]["max-write-bytes-per-sec"], "10MiB");
    // One node by its status address; a number goes as a number.
    c.run(
        "",
        &format!("SET CONFIG \"{}\" `gc.batch-keys` = 256", c.kv_status),
    );
    assert_eq!(kv_config()["gc"]["batch-keys"], 256);
    // A restart-only knob: the node refuses, the statement succeeds with a warning.
    let out = c.run(
        "",
        "SET CONFIG tikv `server.grpc-concurrency` = 2; SHOW WARNINGS",
    );
    assert!(
        out.starts_with("Level\tCode\tMessage\nWarning\t1105\tFailed to set config for kv node")
            && out.contains("server.grpc-concurrency"),
        "{out}"
    );
    c.fails(
        "",
        "SET CONFIG \"127.0.0.1:1\" `gc.batch-keys` = 1",
        "1105 (HY000)",
    );
    c.fails("", "SET CONFIG tidb `x` = 1", "1105 (HY000)");
    c.fails("", "SET CONFIG kv `gc.batch-keys` 1", "1064 (42000)");
}

#[test]
fn a_statements_error_and_warnings_stay_for_show_warnings_and_the_counts() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE w; CREATE TABLE w.t (id INT PRIMARY KEY, v TINYINT)",
    );
    // MariaDB 10.11 answers these lines the same.
    let out = c.run_force(
        "w",
        "SELECT * FROM nope;\n\
         SHOW WARNINGS;\n\
         SHOW ERRORS;\n\
         SELECT @@warning_count, @@error_count;\n\
         SET sql_mode = '';\n\
         INSERT INTO t VALUES (1, 300), (2, 400);\n\
         SELECT @@warning_count, @@error_count;\n\
         SELECT @@global.warning_count;\n\
         SHOW ERRORS;\n\
         PREPARE s FROM 'INSERT INTO t VALUES (?, 1)';\n\
         SET @a = 1;\n\
         EXECUTE s USING @a;\n\
         SELECT @@error_count;\n\
         INSERT INTO t VALUES (3, 500);\n\
         SELECT @@warning_count;\n\
         SET @b = 2;\n\
         SHOW WARNINGS;\n",
    );
    let missing = "Level\tCode\tMessage\nError\t1146\tTable 'w.nope' doesn't exist\n";
    let counts = |w: u32, e: u32| format!("@@warning_count\t@@error_count\n{w}\t{e}\n");
    let scope = "Error\t1238\tVariable 'warning_count' is a SESSION variable\n";
    assert_eq!(
        out,
        format!(
            "{missing}{missing}{}{}Level\tCode\tMessage\n{scope}@@error_count\n1\n{}",
            counts(1, 1),
            counts(2, 0),
            // A statement that reads no table and raises nothing keeps the diagnostics.
            "@@warning_count\n1\nLevel\tCode\tMessage\n\
             Warning\t1264\tOut of range value for column 'v' at row 1\n"
        )
    );
}

#[test]
fn cluster_info_and_cluster_config_show_every_node_pd_lists() {
    let c = Cluster::start();
    // The sql node tells PD where it serves when it starts, then every 10 s.
    let types = "SELECT GROUP_CONCAT(TYPE ORDER BY TYPE) FROM information_schema.CLUSTER_INFO";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !c.run("", types).ends_with("\npd,tidb,tikv\n") {
        assert!(std::time::Instant::now() < deadline, "{}", c.run("", types));
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (_, status) = common::get(&format!("http://{}/status", c.kv_status));
    let status: serde_json::Value = serde_json::from_slice(&status).unwrap();
    let kv = c.run(
        "",
        "SELECT STATUS_ADDRESS, VERSION, GIT_HASH, START_TIME LIKE '____-__-__T__:__:__Z', \
         UPTIME LIKE '%s', SERVER_ID FROM information_schema.CLUSTER_INFO WHERE TYPE = 'tikv'",
    );
    assert_eq!(
        kv,
        format!(
            "STATUS_ADDRESS\tVERSION\tGIT_HASH\tSTART_TIME LIKE '____-__-__T__:__:__Z'\t\
             UPTIME LIKE '%s'\tSERVER_ID\n{}\t{}\t{}\t1\t1\t0\n",
            c.kv_status,
            status["version"].as_str().unwrap(),
            status["git_hash"].as_str().unwrap()
        )
    );
    // CLUSTER_CONFIG reads each node's config as it is now, also after an online change.
    let batch_keys = "SELECT VALUE FROM information_schema.CLUSTER_CONFIG \
                      WHERE TYPE = 'tikv' AND `KEY` = 'gc.batch-keys'";
    c.run("", "SET CONFIG kv `gc.batch-keys` = 300");
    assert_eq!(c.run("", batch_keys), "VALUE\n300\n");
    assert_eq!(
        c.run(
            "",
            "SHOW CONFIG LIKE 'tikv' WHERE Name IN ('gc.batch-keys', 'raftstore.replication')"
        )
        .lines()
        .skip(1)
        .map(|l| l.split('\t').skip(2).collect::<Vec<_>>().join("="))
        .collect::<Vec<_>>(),
        ["gc.batch-keys=300", "raftstore.replication=false"]
    );
    let pd_keys = c.run(
        "",
        "SELECT COUNT(*) > 10 FROM information_schema.CLUSTER_CONFIG WHERE TYPE = 'pd'",
    );
    assert_eq!(pd_keys, "COUNT(*) > 10\n1\n");
    // As TiDB asks: the PROCESS privilege for CLUSTER_INFO, CONFIG for the configuration.
    c.run("", "CREATE USER viewer IDENTIFIED BY 'pw'");
    for statement in [
        "SELECT * FROM information_schema.CLUSTER_INFO",
        "SHOW CONFIG",
    ] {
        let refused = as_user(&c, "viewer", "", statement);
        assert!(refused.unwrap_err().starts_with("1227 (42000)"));
    }
    c.run("", "GRANT PROCESS ON *.* TO viewer");
    let sql_nodes = "SELECT COUNT(*) FROM information_schema.CLUSTER_INFO WHERE TYPE = 'tidb'";
    assert_eq!(as_user(&c, "viewer", "", sql_nodes).unwrap(), "1\n");
    let config = "SELECT COUNT(*) > 10 FROM information_schema.CLUSTER_CONFIG";
    assert!(as_user(&c, "viewer", "", config).is_err());
    c.run("", "GRANT CONFIG ON *.* TO viewer");
    assert_eq!(as_user(&c, "viewer", "", config).unwrap(), "1\n");
}

#[test]
fn caching_sha2_password_accounts_log_in_with_rsa_then_fast_auth() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw1'",
    );
    // The mysql client starts with mysql_native_password: the server switches it to
    // caching_sha2_password. Without TLS the first login is a full one: the client asks for
    // the node's RSA key and sends the password encrypted. The second passes on the fast path.
    let no_tls = ["-u", "sha", "--password=pw1", "--skip-ssl"];
    for _ in 0..2 {
        assert_eq!(
            c.try_run_with("", "SELECT USER()", &no_tls).unwrap(),
            "USER()\nsha@%\n"
        );
    }
    // MariaDB's client with its default --ssl sends the password in the clear when the server
    // offers no TLS; that works too.
    c.run(
        "",
        "CREATE USER clear IDENTIFIED WITH caching_sha2_password BY 'pw'",
    );
    assert_eq!(c.try_run_as("clear", "pw", "SELECT 1").unwrap(), "1\n1\n");
    assert!(c.try_run_as("clear", "wrong", "SELECT 1").is_err());
    let denied = c.try_run_as("sha", "nope", "SELECT 1").unwrap_err();
    assert!(denied.contains("1045"), "{denied}");
    // ALTER USER without IDENTIFIED changes nothing; with it, the plugin stays and the cached
    // fast-auth entry of the old password is stale.
    c.run("", "ALTER USER sha");
    assert_eq!(c.try_run_with("", "SELECT 1", &no_tls).unwrap(), "1\n1\n");
    c.run("", "ALTER USER sha IDENTIFIED BY 'pw2'");
    assert!(c.try_run_as("sha", "pw1", "SELECT 1").is_err());
    assert_eq!(c.try_run_as("sha", "pw2", "SELECT 1").unwrap(), "1\n1\n");
    // And back to mysql_native_password on request.
    c.run(
        "",
        "ALTER USER sha IDENTIFIED WITH mysql_native_password BY 'pw3'",
    );
    assert_eq!(c.try_run_as("sha", "pw3", "SELECT 1").unwrap(), "1\n1\n");
}

/// A bare MySQL protocol client, for the packets no well-behaved client sends.
struct RawClient {
    stream: std::net::TcpStream,
}

impl RawClient {
    /// Logs in as root (no password) with mysql_native_password.
    fn connect(port: u16) -> RawClient {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut c = RawClient { stream };
        let (_, greeting) = c.recv().unwrap();
        assert_eq!(greeting[0], 10, "protocol version 10");
        // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | LONG_PASSWORD | TRANSACTIONS
        let caps: u32 = 0x200 | 0x8000 | 0x80000 | 0x1 | 0x2000;
        let mut login = caps.to_le_bytes().to_vec();
        login.extend_from_slice(&(1u32 << 24).to_le_bytes());
        login.push(45);
        login.extend_from_slice(&[0; 23]);
        login.extend_from_slice(b"root\0");
        login.push(0);
        login.extend_from_slice(b"mysql_native_password\0");
        c.send(1, &login);
        assert_eq!(c.recv().unwrap().1[0], 0x00, "logged in");
        c
    }

    fn send(&mut self, seq: u8, payload: &[u8]) {
        use std::io::Write;
        let len = u32::try_from(payload.len()).unwrap().to_le_bytes();
        let mut packet = vec![len[0], len[1], len[2], seq];
        packet.extend_from_slice(payload);
        self.stream.write_all(&packet).unwrap();
    }

    /// The next packet, or `None` once the server closed the connection.
    fn recv(&mut self) -> Option<(u8, Vec<u8>)> {
        use std::io::Read;
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).ok()?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let mut payload = vec![0u8; len];
        self.stream.read_exact(&mut payload).ok()?;
        Some((header[3], payload))
    }

    /// Sends a command; its answer: an OK or error packet, or a result set's packets.
    fn command(&mut self, seq: u8, payload: &[u8]) -> Vec<Vec<u8>> {
        self.send(seq, payload);
        let first = self.recv().expect("an answer").1;
        if first[0] == 0x00 || first[0] == 0xff {
            return vec![first];
        }
        // Column count, column definitions, EOF, rows, EOF.
        let mut packets = vec![first];
        let mut eofs = 0;
        while eofs < 2 {
            let p = self.recv().expect("the rest of the result set").1;
            if p[0] == 0xfe && p.len() < 9 {
                eofs += 1;
            }
            packets.push(p);
        }
        packets
    }

    /// The code of the error packet a command answers with.
    fn error(&mut self, payload: &[u8]) -> u16 {
        let answer = self.command(0, payload);
        assert_eq!(answer[0][0], 0xff, "an error packet, not {answer:?}");
        u16::from_le_bytes([answer[0][1], answer[0][2]])
    }

    /// `SELECT 1` still answers one row (the connection is in step).
    fn still_works(&mut self) {
        let answer = self.command(0, b"\x03SELECT 1");
        assert_eq!(answer.len(), 5, "{answer:?}");
        assert_eq!(answer[3], b"\x011");
    }
}

#[test]
fn malformed_packets_get_mysql_errors_and_the_connection_or_server_survives() {
    let c = Cluster::start();
    let mut raw = RawClient::connect(c.port);
    // Not UTF-8; a command byte nobody knows; a truncated COM_STMT_EXECUTE; an unknown
    // statement id: errors for that command, as MySQL answers them.
    assert_eq!(raw.error(b"\x03SELECT \xff\xfe"), 1300);
    // Binary data in a string literal, as drivers that interpolate parameters send it.
    let answer = raw.command(0, b"\x03SELECT _binary'\xff\\'\xfe' = X'FF27FE'");
    assert_eq!(answer[3], b"\x011", "{answer:?}");
    raw.still_works();
    assert_eq!(raw.error(b"\x7f"), 1047);
    assert_eq!(raw.error(b"\x17\x01"), 1835);
    assert_eq!(raw.error(b"\x17\x63\x00\x00\x00\x00\x01\x00\x00\x00"), 1243);
    raw.still_works();
    // A prepared statement executed with a parameter type that does not exist: 1210.
    raw.send(0, b"\x16SELECT ?");
    let prepared = raw.recv().unwrap().1;
    assert_eq!(prepared[0], 0x00, "{prepared:?}");
    let id = [prepared[1], prepared[2], prepared[3], prepared[4]];
    let (columns, params) = (prepared[5] as usize, prepared[7] as usize);
    for _ in 0..(params + 1) + (columns + usize::from(columns > 0)) {
        raw.recv().unwrap();
    }
    let mut execute = vec![0x17];
    execute.extend_from_slice(&id);
    execute.extend_from_slice(&[0, 1, 0, 0, 0]); // no cursor, one iteration
    execute.extend_from_slice(&[0x00, 0x01, 0xf0, 0x00]); // null map, types bound, type 0xf0
    assert_eq!(raw.error(&execute), 1210);
    // Sequence numbers wrap at 255 without trouble.
    raw.send(255, b"\x03SELECT 1");
    let (seq, answer) = raw.recv().unwrap();
    assert_eq!((seq, answer[0]), (0, 1));
    for _ in 0..4 {
        raw.recv().unwrap(); // column, EOF, row, EOF
    }
    raw.still_works();
    // A command split into parts whose numbers do not follow each other: MySQL closes the
    // connection; so does Atoll, and the server carries on.
    // COM_RESET_CONNECTION: the session starts afresh (user variables gone, the open
    // transaction rolled back).
    raw.command(0, b"\x03SET @a = 7");
    raw.command(0, b"\x03BEGIN");
    assert_eq!(raw.command(0, b"\x1f")[0][0], 0x00);
    let answer = raw.command(0, b"\x03SELECT @a IS NULL");
    assert_eq!(answer[3], b"\x011");
    let mut part = vec![0x03];
    part.resize(0xff_ffff, b' ');
    raw.send(0, &part);
    raw.send(5, b"SELECT 1");
    assert!(raw.recv().is_none(), "the connection closes");
    RawClient::connect(c.port).still_works();
}

#[test]
fn a_table_created_on_one_sql_node_is_there_on_another_when_create_returns() {
    let mut c = Cluster::start();
    let other = c.add_sql();
    let on_other = |sql: &str| {
        let out = std::process::Command::new("mysql")
            .args([
                "-h",
                "127.0.0.1",
                "-P",
                &other.to_string(),
                "-u",
                "root",
                "--batch",
            ])
            .args(["-e", sql])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The other node answers (and has reported itself alive to the cluster) first.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while on_other("SELECT 1").0 != "1\n1\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "the second sql node never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    c.run("", "CREATE DATABASE d");
    for i in 0..5 {
        // Each DDL returns only once the other node's cached schema may not be older.
        c.run(
            "d",
            &format!("CREATE TABLE t{i} (id INT PRIMARY KEY); INSERT INTO t{i} VALUES ({i})"),
        );
        assert_eq!(
            on_other(&format!("SELECT id FROM d.t{i}")).0,
            format!("id\n{i}\n")
        );
        c.run("d", &format!("DROP TABLE t{i}"));
        let (_, err) = on_other(&format!("SELECT id FROM d.t{i}"));
        assert!(err.contains("1146"), "{err}");
    }
}

#[test]
fn a_connection_that_ends_inside_a_transaction_releases_its_locks() {
    let c = Cluster::start();
    c.run(
        "",
        "create database d; create table d.t (id int primary key, v int); insert into d.t values (1, 0)",
    );
    // The client leaves with the row locked (found by `atoll nemesis`: transfers then waited
    // out the lock's TTL, and failed).
    c.run("", "BEGIN; UPDATE d.t SET v = 1 WHERE id = 1");
    c.run(
        "",
        "SET innodb_lock_wait_timeout = 2; UPDATE d.t SET v = 2 WHERE id = 1",
    );
    assert_eq!(c.run("", "select v from d.t"), "v\n2\n");
}

/// A `mysql` client session in database `d` that runs what is written to its stdin, line
/// by line, as the lines arrive; its answers (batch form, no column names) on its stdout.
fn open_session(c: &Cluster) -> (std::process::Child, std::process::ChildStdin) {
    use std::process::{Command, Stdio};
    let mut session = Command::new("mysql")
        .args(["-h127.0.0.1", "-uroot", "-P"])
        .arg(c.port.to_string())
        .args(["--batch", "--skip-column-names", "d"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = session.stdin.take().unwrap();
    (session, input)
}

/// What one session's two reads of row 1, each a point get with a pushed-down scan, see
/// when another session commits a change to the row between them; `set` sets the first
/// session's mode, and its transaction begins with its first read (autocommit off).
fn reads_around_a_commit(c: &Cluster, set: &str) -> String {
    use std::io::Write;
    c.run("d", "UPDATE t SET v = 1 WHERE id = 1");
    let (first, mut input) = open_session(c);
    let read = "SELECT v, (SELECT SUM(v) FROM t WHERE id < 2) FROM t WHERE id = 1;";
    writeln!(input, "{set} SET autocommit = 0; {read}").unwrap();
    input.flush().unwrap();
    // The change commits once the first session's transaction is open and idle.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let idle = "SELECT COUNT(*) FROM information_schema.TIDB_TRX WHERE STATE = 'Idle'";
    while c.run("d", idle) != "COUNT(*)\n1\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "no transaction opened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    c.run("d", "UPDATE t SET v = 5 WHERE id = 1");
    writeln!(input, "{read} COMMIT;").unwrap();
    drop(input);
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn read_committed_reads_what_committed_before_each_statement_in_pessimistic_transactions() {
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT); \
         INSERT INTO d.t VALUES (1, 1), (2, 0)",
    );
    // REPEATABLE READ (the default): the transaction's snapshot, read after read.
    assert_eq!(reads_around_a_commit(&c, ""), "1 1 1 1");
    // READ COMMITTED: each statement reads the latest committed row, point get and scan alike.
    assert_eq!(
        reads_around_a_commit(
            &c,
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"
        ),
        "1 1 5 5"
    );
    // Without a scope word, SET TRANSACTION is for the next transaction only.
    assert_eq!(
        reads_around_a_commit(&c, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"),
        "1 1 5 5"
    );
    assert_eq!(
        reads_around_a_commit(
            &c,
            "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN; COMMIT;"
        ),
        "1 1 1 1"
    );
    // As in TiDB, optimistic transactions keep their snapshot under READ COMMITTED.
    assert_eq!(
        reads_around_a_commit(
            &c,
            "SET transaction_isolation = 'READ-COMMITTED'; SET tidb_txn_mode = 'optimistic';"
        ),
        "1 1 1 1"
    );
}

#[test]
fn begin_pessimistic_and_begin_optimistic_choose_their_transactions_mode() {
    use std::io::Write;
    let c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1)",
    );
    let (holder, mut input) = open_session(&c);
    writeln!(input, "BEGIN; SELECT id FROM t WHERE id = 1 FOR UPDATE;").unwrap();
    input.flush().unwrap();
    let lock = "SET innodb_lock_wait_timeout = 1; SELECT id FROM t WHERE id = 1 FOR UPDATE";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while c.try_run("d", &format!("BEGIN; {lock}; COMMIT")).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the row never locked");
    }
    // A pessimistic transaction waits for the lock; an optimistic one takes none before it
    // commits.
    let pessimistic = c
        .try_run(
            "d",
            &format!("SET tidb_txn_mode = 'optimistic'; BEGIN PESSIMISTIC; {lock}"),
        )
        .unwrap_err();
    assert!(pessimistic.contains("1205"), "{pessimistic}");
    c.run("d", &format!("begin optimistic; {lock}; ROLLBACK"));
    c.fails("d", "BEGIN SOMEHOW", "1064");
    drop(input);
    assert!(holder.wait_with_output().unwrap().status.success());
}

/// The kv node's requests of each kind in `kinds` so far (its `/metrics`).
fn kv_requests<const N: usize>(c: &Cluster, kinds: [&str; N]) -> [u64; N] {
    let (_, body) = common::get(&format!("http://{}/metrics", c.kv_status));
    let body = String::from_utf8(body).unwrap();
    kinds.map(|kind| {
        let prefix = format!("atoll_kv_request_duration_seconds_count{{type=\"{kind}\"}} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map_or(0, |n| n.trim().parse().unwrap())
    })
}

#[test]
fn an_autocommit_insert_locks_nothing_first_yet_waits_for_a_lock_in_its_way() {
    use std::io::Write;
    let mut c = Cluster::start();
    c.run(
        "",
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT, UNIQUE KEY uv (v))",
    );
    // TiDB's pessimistic-auto-commit = false: no lock request, and no read of the keys
    // either (the prewrite checks that they are free): one request.
    let kinds = ["kv_pessimistic_lock", "kv_batch_get", "kv_prewrite"];
    let [locks, reads, prewrites] = kv_requests(&c, kinds);
    c.run("d", "INSERT INTO t VALUES (1, 1), (2, 2)");
    assert_eq!(kv_requests(&c, kinds), [locks, reads, prewrites + 1]);
    let duplicate = c.try_run("d", "INSERT INTO t VALUES (3, 1)").unwrap_err();
    assert!(
        duplicate.contains("ERROR 1062 (23000)")
            && duplicate.contains("Duplicate entry '1' for key 't.uv'"),
        "{duplicate}"
    );
    // The first row with an error names it, as in MySQL, though the keys were not read: a
    // duplicate before a value out of range, or before a missing parent.
    c.fails(
        "d",
        "INSERT INTO t VALUES (1, 9), (40, 99999999999)",
        "1062",
    );
    c.run(
        "d",
        "CREATE TABLE p (id INT PRIMARY KEY); INSERT INTO p VALUES (1); \
         CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id)); \
         INSERT INTO c VALUES (1, 1)",
    );
    c.fails("d", "INSERT INTO c VALUES (1, 999)", "1062");
    c.fails("d", "INSERT INTO c VALUES (2, 999)", "1452");
    // With it on, the INSERT locks its keys first.
    let locking = c
        .add_sql_with_config("[pessimistic-txn]\npessimistic-auto-commit = true\n")
        .to_string();
    c.try_run_with("d", "INSERT INTO t VALUES (3, 3)", &["-P", &locking])
        .unwrap();
    assert!(kv_requests(&c, kinds)[0] > locks);

    // Another txn's uncommitted row under the same key: the INSERT waits for its txn as a
    // pessimistic one would, then meets the row (IGNORE: one warning per row, none left
    // from the first run), or takes the key once that txn rolled back.
    let holding = |row: &str| {
        let (holder, mut input) = open_session(&c);
        writeln!(input, "BEGIN; INSERT INTO t VALUES {row};").unwrap();
        input.flush().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let idle = "SELECT COUNT(*) FROM information_schema.TIDB_TRX WHERE STATE = 'Idle'";
        while c.run("d", idle) != "COUNT(*)\n1\n" {
            assert!(std::time::Instant::now() < deadline, "no row held");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        (holder, input)
    };
    let ends_after = |(holder, mut input): (std::process::Child, std::process::ChildStdin),
                      end: &'static str| {
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            writeln!(input, "{end};").unwrap();
            drop(input);
            assert!(holder.wait_with_output().unwrap().status.success());
        })
    };
    let ending = ends_after(holding("(10, 10)"), "COMMIT");
    let waited = std::time::Instant::now();
    assert_eq!(
        c.run(
            "d",
            "INSERT IGNORE INTO t VALUES (10, 11), (11, 1), (12, 12); SHOW WARNINGS"
        ),
        "Level\tCode\tMessage\n\
         Warning\t1062\tDuplicate entry '10' for key 't.PRIMARY'\n\
         Warning\t1062\tDuplicate entry '1' for key 't.uv'\n"
    );
    assert!(waited.elapsed() > std::time::Duration::from_secs(1));
    ending.join().unwrap();
    let ending = ends_after(holding("(20, 20)"), "ROLLBACK");
    c.run("d", "INSERT INTO t VALUES (20, 21)");
    ending.join().unwrap();
    assert_eq!(
        c.run("d", "SELECT id, v FROM t WHERE id >= 10 ORDER BY id"),
        "id\tv\n10\t10\n12\t12\n20\t21\n"
    );
    // Its wait ends at innodb_lock_wait_timeout, as a pessimistic INSERT's does.
    let ending = ends_after(holding("(30, 30)"), "ROLLBACK");
    c.fails(
        "d",
        "SET innodb_lock_wait_timeout = 1; INSERT INTO t VALUES (30, 31)",
        "1205",
    );
    ending.join().unwrap();
}
