// Package dashprices hands a price book to the ClickHouse store as the
// dashboards read it: plain values, because the store does not import the
// price book (storage stays apart from money). The wiring and the tests
// that load the dashboards' price table all convert here, once.
package dashprices

import (
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// Of is book as the ClickHouse store keeps it for the dashboards; nil for
// a nil book (WritePrices refuses it).
func Of(book *pricebook.Book) *clickhouse.Prices {
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
