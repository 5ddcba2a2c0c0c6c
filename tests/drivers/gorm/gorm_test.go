// GORM, the Go ORM most TiDB users have, against a running sql node: AutoMigrate creates
// the tables from structs and migrates them again (reading the schema back through
// information_schema and SHOW), then create, read, update and delete through the ORM, in a
// transaction and out of one.
//
// Run by crates/atoll/tests/drivers.rs, which starts the cluster and sets ATOLL_PORT.
package gormsmoke

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type Product struct {
	ID        uint   `gorm:"primaryKey"`
	Code      string `gorm:"size:32;uniqueIndex"`
	Price     uint   `gorm:"index"`
	Weight    float64
	CreatedAt time.Time
	UpdatedAt time.Time
}

type Order struct {
	ID        uint64 `gorm:"primaryKey;autoIncrement"`
	ProductID uint
	Quantity  int
	Note      *string `gorm:"size:100"`
}

func open(t *testing.T, db string) *gorm.DB {
	t.Helper()
	port := os.Getenv("ATOLL_PORT")
	if port == "" {
		t.Fatal("ATOLL_PORT is not set")
	}
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%s)/%s?charset=utf8mb4&parseTime=True&loc=UTC", port, db)
	g, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAutoMigrateAndCRUD(t *testing.T) {
	admin := open(t, "")
	if err := admin.Exec("DROP DATABASE IF EXISTS gorm_smoke").Error; err != nil {
		t.Fatal(err)
	}
	if err := admin.Exec("CREATE DATABASE gorm_smoke").Error; err != nil {
		t.Fatal(err)
	}
	db := open(t, "gorm_smoke")
	// Twice: the second run reads the tables back and finds nothing to change.
	for i := 0; i < 2; i++ {
		if err := db.AutoMigrate(&Product{}, &Order{}); err != nil {
			t.Fatalf("AutoMigrate (run %d): %v", i+1, err)
		}
	}
	if !db.Migrator().HasTable(&Product{}) || !db.Migrator().HasIndex(&Product{}, "Code") {
		t.Fatal("the migrator does not see the table or its unique index")
	}
	columns, err := db.Migrator().ColumnTypes(&Product{})
	if err != nil || len(columns) != 6 {
		t.Fatalf("column types: %d, %v", len(columns), err)
	}

	p := Product{Code: "D42", Price: 100, Weight: 1.5}
	if err := db.Create(&p).Error; err != nil || p.ID == 0 {
		t.Fatalf("create: id %d, %v", p.ID, err)
	}
	var got Product
	if err := db.First(&got, "code = ?", "D42").Error; err != nil || got.Price != 100 || got.Weight != 1.5 {
		t.Fatalf("first: %+v, %v", got, err)
	}
	if err := db.Model(&got).Update("Price", 200).Error; err != nil {
		t.Fatal(err)
	}
	note := "gift"
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&Order{ProductID: got.ID, Quantity: 2, Note: &note}).Error; err != nil {
			return err
		}
		return tx.Model(&Product{}).Where("id = ?", got.ID).Update("price", gorm.Expr("price - ?", 1)).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		tx.Create(&Order{ProductID: got.ID, Quantity: 99})
		return errors.New("rolled back")
	})
	if err == nil {
		t.Fatal("the transaction should have failed")
	}
	var orders []Order
	if err := db.Where("product_id = ?", got.ID).Find(&orders).Error; err != nil || len(orders) != 1 || *orders[0].Note != "gift" {
		t.Fatalf("orders: %+v, %v", orders, err)
	}
	db.First(&got, got.ID)
	if got.Price != 199 {
		t.Fatalf("price %d, want 199", got.Price)
	}
	if err := db.Create(&Product{Code: "D42"}).Error; err == nil {
		t.Fatal("a duplicate code was accepted")
	}
	if err := db.Delete(&Product{}, got.ID).Error; err != nil {
		t.Fatal(err)
	}
	var count int64
	db.Model(&Product{}).Count(&count)
	if count != 0 {
		t.Fatalf("%d products left", count)
	}
}
