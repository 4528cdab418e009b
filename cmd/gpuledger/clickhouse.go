package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/dashboards/dashprices"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// ClickHouse is wired here so the ledger contract never imports it.
func init() {
	storeOpeners[ledger.SchemeClickHouse] = openClickHouse
	clickhouseMigrate = func(ctx context.Context, d ledger.DSN, cluster string) error {
		d, err := withPasswordFile(d)
		if err != nil {
			return err
		}
		return clickhouse.Migrate(ctx, d, cluster)
	}
	clickhousePrices = func(ctx context.Context, d ledger.DSN, book *pricebook.Book) error {
		st, err := openClickHouse(ctx, d)
		if err != nil {
			return err
		}
		defer st.Close()
		return st.(*clickhouse.Store).WritePrices(ctx, dashprices.Of(book), time.Now())
	}
}

func openClickHouse(ctx context.Context, d ledger.DSN) (ledger.Store, error) {
	d, err := withPasswordFile(d)
	if err != nil {
		return nil, err
	}
	return clickhouse.Opener(clickhouse.Options{Cluster: os.Getenv("GPULEDGER_CLICKHOUSE_CLUSTER")})(ctx, d)
}

// withPasswordFile fills a DSN without a password from the file named by
// GPULEDGER_CLICKHOUSE_PASSWORD_FILE (a mounted Kubernetes secret), so the
// password need not sit in a flag or an environment variable.
func withPasswordFile(d ledger.DSN) (ledger.DSN, error) {
	path := os.Getenv("GPULEDGER_CLICKHOUSE_PASSWORD_FILE")
	if d.Password != "" || path == "" {
		return d, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return d, fmt.Errorf("cannot read ClickHouse password file %s: %w", path, err)
	}
	d.Password = strings.TrimRight(string(b), "\r\n")
	return d, nil
}
