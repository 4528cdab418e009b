package main

import (
	"testing"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// A flat price book has no hourly rates; the live price series must still
// carry its slot prices (per average month hour), not a zero default.
func TestExportedPricesOfAFlatBook(t *testing.T) {
	book, err := pricebook.Parse("flat.yaml", []byte(`currency: USD
timezone: UTC
policy: flat
slotRates:
  H100-SXM5-80GB: 1461.00
  A100-SXM4-80GB: 730.50
`))
	if err != nil {
		t.Fatal(err)
	}
	got := exportedPrices(book)
	// 730.50 / 730.5 h = 1.00 and 1461.00 / 730.5 h = 2.00, sorted by model.
	want := []struct {
		model string
		rate  float64
	}{{"A100-SXM4-80GB", 1}, {"H100-SXM5-80GB", 2}}
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Model != w.model || got[i].PerGPUHour != w.rate || got[i].Currency != "USD" {
			t.Errorf("series %d = %+v, want %s %v USD", i, got[i], w.model, w.rate)
		}
	}
}
