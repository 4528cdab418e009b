package main

import (
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/deploy"
)

// demoPrices is the demo's price book: deploy/prices.yaml, compiled in, so
// `report --prices deploy/prices.yaml` on the demo's ledger reproduces its
// chargeback.
func demoPrices() (*pricebook.Book, error) {
	return pricebook.Parse(deploy.PricesPath, deploy.Prices)
}

// loadPrices reads the price book at path; "" means none.
func loadPrices(path string) (*pricebook.Book, error) {
	if path == "" {
		return nil, nil
	}
	return pricebook.Load(path)
}

// avgMonthHours is a Gregorian calendar month's mean length (8,766 h a
// year over 12). Live panels of a flat price book show the slot price over
// it; the report prorates by each month's real hours.
const avgMonthHours = 730.5

// exportedPrices turns a price book into gpuledger_price_per_gpu_hour
// series, the default rate as model="default", so live cost panels use the
// report's own rates. A flat book has no hourly rates: its slot prices are
// exported per average month hour instead, so the panels are not zero.
func exportedPrices(book *pricebook.Book) []exposition.Price {
	if book == nil {
		return nil
	}
	var out []exposition.Price
	if book.Policy == pricebook.PolicyFlat {
		for m, r := range book.SlotRates {
			out = append(out, exposition.Price{Model: m, Currency: book.Currency.Code, PerGPUHour: r.Float64() / avgMonthHours})
		}
		slices.SortFunc(out, func(a, b exposition.Price) int { return strings.Compare(a.Model, b.Model) })
		return out
	}
	for _, m := range book.Models() {
		if r, ok := book.RateFor(m); ok {
			out = append(out, exposition.Price{Model: m, Currency: book.Currency.Code, PerGPUHour: r.Float64()})
		}
	}
	return append(out, exposition.Price{Model: "default", Currency: book.Currency.Code, PerGPUHour: book.DefaultRate.Float64()})
}
