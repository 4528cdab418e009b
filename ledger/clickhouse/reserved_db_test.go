package clickhouse

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/ledger"
)

// The ledger's tables never go into ClickHouse's own databases: the DSN
// parser refuses them, and Migrate refuses a DSN built by hand, before
// connecting anywhere.
func TestMigrateRefusesClickHouseSystemDatabases(t *testing.T) {
	for _, db := range []string{"system", "INFORMATION_SCHEMA", "information_schema"} {
		dsn := "clickhouse://u:p@127.0.0.1:1/" + db
		if _, err := ledger.ParseDSN(dsn); err == nil || !strings.Contains(err.Error(), "ClickHouse's own") {
			t.Errorf("ParseDSN(%q) = %v, want it refused as ClickHouse's own database", dsn, err)
		}
		d := mustDSN(t, "clickhouse://u:p@127.0.0.1:1/gpuledger")
		d.Database = db
		err := Migrate(context.Background(), d, "")
		if err == nil || !strings.Contains(err.Error(), "ClickHouse's own") || strings.Contains(err.Error(), ":p@") {
			t.Errorf("Migrate into %s = %v, want it refused (without the password)", db, err)
		}
	}
	// Names that only look alike are ordinary databases.
	for _, db := range []string{"System", "system_ledger", "gpuledger"} {
		if _, err := ledger.ParseDSN("clickhouse://u:p@127.0.0.1:1/" + db); err != nil {
			t.Errorf("ParseDSN of database %q: %v", db, err)
		}
	}
}
