package clickhouse

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/tenancy"
)

// TestFOCUSFromClickHouse: two days of a 4-GPU fleet stored in ClickHouse
// (read through its rollups) and in the embedded ledger. For every policy
// and idle rule, the FOCUS file from ClickHouse passes the validator, is
// byte for byte the embedded ledger's, and its BilledCost adds up to the
// finance CSV's total and to the total computed here from the raw rows:
// per model, the policy's column in GPU-seconds / 3600 x rate, summed and
// rounded once.
func TestFOCUSFromClickHouse(t *testing.T) {
	ctx := context.Background()
	ch, file, rows, from, to := focusStores(t, 11)
	for _, policy := range []string{"allocation", "usage"} {
		for _, idle := range []string{"platform", "shared"} {
			t.Run(policy+"/"+idle, func(t *testing.T) {
				book := focusBook(t, policy, idle)
				exports := map[string][]byte{}
				for name, src := range map[string]report.Source{"clickhouse": ch, "embedded": file} {
					r, err := report.Build(ctx, src, book, from, to)
					if err != nil {
						t.Fatal(err)
					}
					var fo, fin bytes.Buffer
					if err := report.WriteFOCUS(&fo, r); err != nil {
						t.Fatal(err)
					}
					if err := report.WriteCSV(&fin, r); err != nil {
						t.Fatal(err)
					}
					exports[name] = fo.Bytes()
					vs, err := focusvalidate.Validate(bytes.NewReader(fo.Bytes()))
					if err != nil || len(vs) > 0 {
						t.Fatalf("%s: validator: %v %v", name, vs, err)
					}
					billed, amounts := csvSum(t, fo.Bytes(), "BilledCost"), csvSum(t, fin.Bytes(), "amount")
					want := expectedFromRows(t, rows, focusRates, pricebook.Policy(policy))
					if billed.Cmp(amounts) != 0 || billed.FloatString(2) != want {
						t.Errorf("%s: BilledCost adds up to %s, finance CSV %s, raw rows x rates %s", name,
							billed.FloatString(2), amounts.FloatString(2), want)
					}
				}
				if !bytes.Equal(exports["clickhouse"], exports["embedded"]) {
					t.Errorf("FOCUS files differ between ClickHouse and the embedded ledger")
				}
			})
		}
	}
}

// expectedFromRows is the period's total from the raw rows: GPU-seconds of
// the policy's column per model (every value a multiple of 1/64, so the
// float sums are exact) x the model's rate, rounded once to cents.
func expectedFromRows(t *testing.T, rows []attribution.Row, rates map[string]string, policy pricebook.Policy) string {
	t.Helper()
	secs := map[string]float64{}
	for _, r := range rows {
		if policy == pricebook.PolicyUsage {
			secs[r.GPUModel] += r.UsedGPUSeconds
		} else {
			secs[r.GPUModel] += r.AllocatedGPUSeconds
		}
	}
	total := new(big.Rat)
	for m, s := range secs {
		rate, ok := new(big.Rat).SetString(focusRates[m])
		if !ok {
			t.Fatalf("no rate for %s", m)
		}
		x := new(big.Rat).SetFloat64(s)
		x.Quo(x, big.NewRat(3600, 1))
		total.Add(total, x.Mul(x, rate))
	}
	return total.FloatString(2)
}

func csvSum(t *testing.T, data []byte, col string) *big.Rat {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, h := range recs[0] {
		if h == col {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no column %s", col)
	}
	sum := new(big.Rat)
	for _, r := range recs[1:] {
		x, ok := new(big.Rat).SetString(r[idx])
		if !ok {
			t.Fatalf("%s %q is not a decimal", col, r[idx])
		}
		sum.Add(sum, x)
	}
	return sum
}

// focusRates are the FOCUS tests' rates: one of them has more decimals than
// any currency, so rounding is exercised.
var focusRates = map[string]string{"A100-SXM4-80GB": "2.40", "H100-80GB-HBM3": "4.123456789"}

// focusStores puts two days of a 4-GPU fleet (fleet seed) into ClickHouse,
// rollups rebuilt, and into an embedded ledger.
func focusStores(t *testing.T, seed uint64) (ch *Store, file *filestore.FileStore, rows []attribution.Row, from, to time.Time) {
	t.Helper()
	ctx := context.Background()
	ch, _ = openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	from = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to = from.Add(48 * time.Hour)
	rows = fleet(seed, 2, 2, int(to.Sub(from)/time.Minute), from)
	// One GPU is MIG-partitioned: its tenants hold instances whose rows
	// carry the profile (the FOCUS SkuId names it).
	for i := range rows {
		r := &rows[i]
		if r.GPUUUID == "GPU-01-01" && r.Kind == attribution.KindContainer {
			c := r.SliceID[len(r.SliceID)-1:]
			r.SliceID = "MIG-0000000" + c + "-0000-4000-8000-00000000000" + c
			r.MIGProfile, r.SharingMode = focusMIGProfiles[c], string(tenancy.MIG)
		}
	}
	appendAll(t, ch, rows, 20000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.RebuildRollups(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	return ch, file, rows, from, to
}

// focusMIGProfiles are the profiles of focusStores' MIG instances, by the
// last character of their slice (and UUID).
var focusMIGProfiles = map[string]string{"0": "3g.40gb", "1": "4g.40gb"}

// focusBook is a UTC price book of focusRates under policy and idle.
func focusBook(t *testing.T, policy, idle string) *pricebook.Book {
	t.Helper()
	y := "currency: USD\ntimezone: UTC\npolicy: " + policy + "\nidle: " + idle + "\ndefaultRate: 1\nrates:\n"
	for m, r := range focusRates {
		y += "  " + m + ": " + r + "\n"
	}
	book, err := pricebook.Parse("prices.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return book
}
