// The Go driver most TiDB users have, go-sql-driver/mysql, against a running sql node as an
// application uses it, in both of its modes: placeholders interpolated on the client into the
// text protocol (interpolateParams=true), and server-side prepared statements in the binary
// protocol (the default). Every column type reads back exact into Go's types (parseTime=true
// gives time.Time), expressions are typed as MySQL types them, prepared statements run again,
// transactions commit and roll back, errors carry MySQL's codes, large values and many rows
// go through.
//
// Run by crates/atoll/tests/drivers.rs, which starts the cluster and sets ATOLL_PORT.
package drivers

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// modes are the driver's two ways of sending a statement with parameters.
var modes = map[string]string{
	"interpolated": "interpolateParams=true",
	"prepared":     "interpolateParams=false",
}

func open(t *testing.T, db, params string) *sql.DB {
	t.Helper()
	port := os.Getenv("ATOLL_PORT")
	if port == "" {
		t.Fatal("ATOLL_PORT is not set")
	}
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%s)/%s?parseTime=true&%s%s", port, db, params, tlsParam(t))
	d, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// tlsParam is "&tls=atoll" when ATOLL_TLS_CA names a CA (the suite then runs against a node
// that serves only TLS, and verifies its certificate against that CA), else "".
func tlsParam(t *testing.T) string {
	ca := os.Getenv("ATOLL_TLS_CA")
	if ca == "" {
		return ""
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", ca)
	}
	if err := mysql.RegisterTLSConfig("atoll", &tls.Config{RootCAs: roots}); err != nil {
		t.Fatal(err)
	}
	return "&tls=atoll"
}

// forEachMode runs `f` once per mode, each with a fresh database of its own.
func forEachMode(t *testing.T, name string, f func(t *testing.T, d *sql.DB)) {
	for mode, params := range modes {
		t.Run(mode, func(t *testing.T) {
			db := "go_" + name + "_" + mode
			admin := open(t, "", params)
			mustExec(t, admin, "DROP DATABASE IF EXISTS "+db)
			mustExec(t, admin, "CREATE DATABASE "+db)
			f(t, open(t, db, params))
		})
	}
}

func mustExec(t *testing.T, d interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := d.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func TestConnectsWithAndWithoutADatabase(t *testing.T) {
	for mode, params := range modes {
		t.Run(mode, func(t *testing.T) {
			var db sql.NullString
			if err := open(t, "", params).QueryRow("SELECT DATABASE()").Scan(&db); err != nil || db.Valid {
				t.Fatalf("no database: %v %v", db, err)
			}
			if err := open(t, "information_schema", params).QueryRow("SELECT DATABASE()").Scan(&db); err != nil || db.String != "information_schema" {
				t.Fatalf("database information_schema: %v %v", db, err)
			}
		})
	}
}

func TestEveryColumnTypeReadsBackExact(t *testing.T) {
	forEachMode(t, "types", func(t *testing.T, d *sql.DB) {
		mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, ti TINYINT, bi BIGINT, ub BIGINT UNSIGNED,"+
			" dec4 DECIMAL(12,4), f DOUBLE, dt DATETIME, dt6 DATETIME(6), dd DATE, s VARCHAR(20), b BLOB)")
		when := time.Date(2024, 2, 29, 13, 5, 9, 0, time.UTC)
		micro := time.Date(2024, 2, 29, 13, 5, 9, 500001000, time.UTC)
		day := time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
		blob := []byte{0, 0xff, 0x80, '\'', '\\', 'b'}
		mustExec(t, d, "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			1, -128, int64(-9223372036854775808), uint64(18446744073709551615), "-12345678.1234",
			2.5, when, micro, day, "héllo ☃", blob)
		var (
			id, ti  int
			bi      int64
			ub      uint64
			dec4    string
			f       float64
			dt, dt6 time.Time
			dd      time.Time
			s       string
			b       []byte
		)
		err := d.QueryRow("SELECT * FROM t WHERE id = ?", 1).Scan(&id, &ti, &bi, &ub, &dec4, &f, &dt, &dt6, &dd, &s, &b)
		if err != nil {
			t.Fatal(err)
		}
		if id != 1 || ti != -128 || bi != -9223372036854775808 || ub != 18446744073709551615 ||
			dec4 != "-12345678.1234" || f != 2.5 || !dt.Equal(when) || !dt6.Equal(micro) ||
			!dd.Equal(day) || s != "héllo ☃" || !bytes.Equal(b, blob) {
			t.Fatalf("read back %v %v %v %v %v %v %v %v %v %q %x", id, ti, bi, ub, dec4, f, dt, dt6, dd, s, b)
		}
		rows, err := d.Query("SELECT * FROM t WHERE id = ?", 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		types, _ := rows.ColumnTypes()
		var names []string
		for _, c := range types {
			names = append(names, c.DatabaseTypeName())
		}
		want := "INT TINYINT BIGINT UNSIGNED BIGINT DECIMAL DOUBLE DATETIME DATETIME DATE VARCHAR BLOB"
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("column types %q, want %q", got, want)
		}
		if nullable, ok := types[0].Nullable(); !ok || nullable {
			t.Fatalf("the primary key is reported nullable")
		}
	})
}

func TestExpressionsAreTypedAsMySQLTypesThem(t *testing.T) {
	cases := map[string]string{
		"1": "BIGINT", "2.5": "DECIMAL", "1e3": "DOUBLE", "'x'": "VARCHAR", "NOW()": "DATETIME",
		"CURDATE()": "DATE", "COUNT(*)": "BIGINT", "@@autocommit": "BIGINT", "7 / 2": "DECIMAL",
	}
	for mode, params := range modes {
		t.Run(mode, func(t *testing.T) {
			d := open(t, "", params)
			for expr, want := range cases {
				rows, err := d.Query("SELECT "+expr+" WHERE 1 = ?", 1)
				if err != nil {
					t.Fatalf("%s: %v", expr, err)
				}
				types, _ := rows.ColumnTypes()
				if got := types[0].DatabaseTypeName(); got != want {
					t.Errorf("SELECT %s: %s, want %s", expr, got, want)
				}
				rows.Close()
			}
			var now time.Time
			if err := d.QueryRow("SELECT NOW()").Scan(&now); err != nil || time.Since(now) > time.Hour || time.Since(now) < -time.Hour {
				t.Fatalf("NOW() as time.Time: %v %v", now, err)
			}
		})
	}
}

func TestPreparedStatementsRunAgain(t *testing.T) {
	forEachMode(t, "prepared", func(t *testing.T, d *sql.DB) {
		mustExec(t, d, "CREATE TABLE p (id INT PRIMARY KEY, name VARCHAR(10))")
		ins, err := d.Prepare("INSERT INTO p VALUES (?, ?)")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := ins.Exec(i, fmt.Sprintf("n%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		ins.Close()
		sel, err := d.Prepare("SELECT name FROM p WHERE id = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer sel.Close()
		for _, i := range []int{3, 1, 4, 1} {
			var name string
			if err := sel.QueryRow(i).Scan(&name); err != nil || name != fmt.Sprintf("n%d", i) {
				t.Fatalf("id %d: %q %v", i, name, err)
			}
		}
	})
}

func TestTransactionsCommitAndRollBack(t *testing.T) {
	forEachMode(t, "txn", func(t *testing.T, d *sql.DB) {
		mustExec(t, d, "CREATE TABLE acct (id INT PRIMARY KEY, bal INT)")
		mustExec(t, d, "INSERT INTO acct VALUES (1, 100)")
		tx, _ := d.Begin()
		mustExec(t, tx, "UPDATE acct SET bal = bal - 10 WHERE id = ?", 1)
		tx.Rollback()
		tx, _ = d.Begin()
		mustExec(t, tx, "UPDATE acct SET bal = bal - 10 WHERE id = ?", 1)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var bal int
		if err := d.QueryRow("SELECT bal FROM acct").Scan(&bal); err != nil || bal != 90 {
			t.Fatalf("balance %d %v", bal, err)
		}
	})
}

func TestErrorsCarryMySQLCodes(t *testing.T) {
	forEachMode(t, "errors", func(t *testing.T, d *sql.DB) {
		mustExec(t, d, "CREATE TABLE e (id INT PRIMARY KEY)")
		mustExec(t, d, "INSERT INTO e VALUES (1)")
		for q, code := range map[string]uint16{
			"INSERT INTO e VALUES (?)":          1062,
			"SELECT * FROM missing WHERE 1 = ?": 1146,
			"SELECT nope FROM e WHERE 1 = ?":    1054,
		} {
			_, err := d.Exec(q, 1)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != code {
				t.Errorf("%s: %v, want error %d", q, err, code)
			}
		}
	})
}

func TestLargeValuesAndManyRows(t *testing.T) {
	forEachMode(t, "large", func(t *testing.T, d *sql.DB) {
		mustExec(t, d, "CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
		blob := bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff, '\''}, 200_000)
		mustExec(t, d, "INSERT INTO big VALUES (?, ?)", 1, blob)
		var got []byte
		if err := d.QueryRow("SELECT b FROM big WHERE id = ?", 1).Scan(&got); err != nil || !bytes.Equal(got, blob) {
			t.Fatalf("blob of %d bytes read back as %d: %v", len(blob), len(got), err)
		}
		mustExec(t, d, "CREATE TABLE s (id INT PRIMARY KEY, v VARCHAR(10))")
		var values []string
		for i := 0; i < 5000; i++ {
			values = append(values, fmt.Sprintf("(%d, 'v%d')", i, i))
		}
		mustExec(t, d, "INSERT INTO s VALUES "+strings.Join(values, ", "))
		rows, err := d.Query("SELECT id, v FROM s WHERE id >= ? ORDER BY id", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id int
			var v string
			if err := rows.Scan(&id, &v); err != nil || id != n || v != fmt.Sprintf("v%d", n) {
				t.Fatalf("row %d: %d %q %v", n, id, v, err)
			}
			n++
		}
		if n != 5000 {
			t.Fatalf("%d rows", n)
		}
	})
}
