package main

import (
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

// exportedPrices turns a price book into gpuledger_price_per_gpu_hour
// series, the default rate as model="default", so live cost panels use the
// report's own rates.
func exportedPrices(book *pricebook.Book) []exposition.Price {
	if book == nil {
		return nil
	}
	var out []exposition.Price
	for _, m := range book.Models() {
		if r, ok := book.RateFor(m); ok {
			out = append(out, exposition.Price{Model: m, Currency: book.Currency.Code, PerGPUHour: r.Float64()})
		}
	}
	return append(out, exposition.Price{Model: "default", Currency: book.Currency.Code, PerGPUHour: book.DefaultRate.Float64()})
}
