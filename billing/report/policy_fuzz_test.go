package report

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// aggSource serves fixed day aggregates.
type aggSource struct {
	keepsNone
	aggs []ledger.Aggregate
}

func (s aggSource) Aggregate(context.Context, ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	return s.aggs, nil
}

func (aggSource) Findings(context.Context, time.Time, time.Time, func(attribution.Finding) error) error {
	return nil
}

// FuzzPolicyAggregates: whatever the ledger's sums say (NaN, negative or
// huge memory, memory beyond the device, used beyond capacity), every
// policy either refuses them with an error or bills lines that add up to
// the total; with sane sums (non-negative, within the day), no line but
// the rounding line is negative and the total is the policy's capacity x
// price.
func FuzzPolicyAggregates(f *testing.F) {
	f.Add(uint8(2), uint16(300), 27000.0, 81920*36000*0.25, 1800.0, 81920*36000*0.55, 7200.0)
	f.Add(uint8(2), uint16(1000), 1.0, math.NaN(), 0.0, 0.0, 0.0)
	f.Add(uint8(2), uint16(300), 1.0, -5.0, 0.0, 0.0, 0.0)
	f.Add(uint8(2), uint16(300), 1.0, 1e300, 0.0, 0.0, 0.0)
	f.Add(uint8(2), uint16(500), 3600.0, 81920*3600*4.0, 0.0, 81920*3600*3.0, 0.0)
	f.Add(uint8(3), uint16(0), 3600.0, 0.0, 1800.0, 0.0, 1800.0)
	f.Add(uint8(0), uint16(0), -1.0, 0.0, 1e20, 0.0, math.Inf(1))
	f.Fuzz(func(t *testing.T, policy uint8, weight uint16, aUsed, aMem, bUsed, bMem, idle float64) {
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		const model = "A100-SXM4-80GB"
		agg := func(team string, kind attribution.Kind, alloc, used, mem float64) ledger.Aggregate {
			return ledger.Aggregate{BucketStart: day, Team: team, Namespace: team, GPUModel: model, Mode: "timeslicing",
				Kind: kind, AllocatedSeconds: alloc, UsedSeconds: used, MemoryMiBSeconds: mem, Rows: 1}
		}
		// One GPU for 10 h: a and b hold half each; the used column adds
		// up to the 36000 s only when the fuzzer's numbers do.
		src := aggSource{aggs: []ledger.Aggregate{
			agg("a", attribution.KindContainer, 18000, aUsed, aMem), agg("b", attribution.KindContainer, 18000, bUsed, bMem),
			agg("", attribution.KindUnallocated, 0, 0, 0), agg("", attribution.KindIdle, 0, idle, 0),
		}}
		y := "currency: USD\nrates: {" + model + ": 2.40}\ndefaultRate: 1\n"
		switch policy % 4 {
		case 0:
			y += "policy: allocation\n"
		case 1:
			y += "policy: usage\n"
		case 2:
			w := weight % 1001 // 0.000 to 1.000
			y += fmt.Sprintf("policy: usage\nmemoryWeight: %d.%03d\n", w/1000, w%1000)
		case 3:
			y = "currency: USD\npolicy: flat\nslotRates: {" + model + ": 800}\n"
		}
		if policy&4 != 0 {
			y += "idle: shared\n"
		}
		b, err := pricebook.Parse("fuzz.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(context.Background(), src, b, day, day.Add(24*time.Hour))
		if err != nil {
			return
		}
		var sum int64
		for _, l := range r.Lines {
			sum += l.Amount
		}
		if sum != r.Total {
			t.Fatalf("lines add up to %d, total %d", sum, r.Total)
		}
		sane := aUsed >= 0 && bUsed >= 0 && idle >= 0 && aMem >= 0 && bMem >= 0 && aUsed+bUsed+idle == 36000
		if !sane {
			return
		}
		want := map[bool]int64{false: 2400, true: 1075}[b.Policy == "flat"] // 10 h x 2.40; 10/744 x 800
		if r.Total != want {
			t.Fatalf("total %d, want %d", r.Total, want)
		}
		for _, l := range r.Lines {
			if l.Type != LineRounding && l.Amount < 0 {
				t.Fatalf("line %s/%s is negative: %d", l.Team, l.Type, l.Amount)
			}
		}
	})
}
