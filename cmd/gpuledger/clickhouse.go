package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

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
		return st.(*clickhouse.Store).WritePrices(ctx, dashboardPrices(book), time.Now())
	}
}

// dashboardPrices is book as the ClickHouse store keeps it for the
// dashboards: plain values, since the store does not import the price
// book. Nil for a nil book (WritePrices refuses it).
func dashboardPrices(book *pricebook.Book) *clickhouse.Prices {
	if book == nil {
		return nil
	}
	p := &clickhouse.Prices{Source: book.Source, Currency: book.Currency.Code, MinorUnit: book.Currency.MinorUnit,
		Timezone: book.Timezone, Policy: string(book.Policy), Idle: string(book.Idle), MemoryWeighted: book.MemoryWeighted(),
		Rates: make(map[string]string, len(book.Rates)), DefaultRate: book.DefaultRate.Format(0)}
	for m, r := range book.Rates {
		p.Rates[m] = r.Format(0)
	}
	return p
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
