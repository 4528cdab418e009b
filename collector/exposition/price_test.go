package exposition

import (
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// The price book is served from the first scrape on and in every cycle's
// snapshot, one series per model and currency.
func TestPriceBookIsExported(t *testing.T) {
	e := New(node, Options{Prices: []Price{
		{Model: "A100-SXM4-80GB", Currency: "EUR", PerGPUHour: 2.4},
		{Model: "default", Currency: "EUR", PerGPUHour: 2},
	}})
	for i := range 2 {
		if i == 1 {
			e.Update(attribution.CycleResult{}, CycleMeta{})
		}
		mfs := gather(t, e)
		got := mustValue(t, mfs, "gpuledger_price_per_gpu_hour", map[string]string{"model": "A100-SXM4-80GB", "currency": "EUR"})
		if got != 2.4 {
			t.Errorf("cycle %d: A100 price %v, want 2.4", i, got)
		}
		if got := mustValue(t, mfs, "gpuledger_price_per_gpu_hour", map[string]string{"model": "default", "currency": "EUR"}); got != 2 {
			t.Errorf("cycle %d: default price %v, want 2", i, got)
		}
	}
}
