package clickhouse

import (
	"bytes"
	"context"
	"testing"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestFOCUSPerDeviceFromClickHouse: the per-device FOCUS file (report.
// LoadDevices) of two days of a 4-GPU fleet, for every policy and idle
// rule: from ClickHouse it passes the validator, has more rows than the
// finance CSV, adds up to the finance CSV's total and to the raw rows
// priced here, and is byte for byte the embedded ledger's.
func TestFOCUSPerDeviceFromClickHouse(t *testing.T) {
	ctx := context.Background()
	ch, file, rows, from, to := focusStores(t, 13)
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
					if err := report.LoadDevices(ctx, src, r); err != nil {
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
					if n, m := bytes.Count(fo.Bytes(), []byte("\n")), bytes.Count(fin.Bytes(), []byte("\n")); n <= m {
						t.Errorf("%s: %d FOCUS lines, %d finance lines: not split per device", name, n, m)
					}
					billed, amounts := csvSum(t, fo.Bytes(), "BilledCost"), csvSum(t, fin.Bytes(), "amount")
					want := expectedFromRows(t, rows, focusRates, pricebook.Policy(policy))
					if billed.Cmp(amounts) != 0 || billed.FloatString(2) != want {
						t.Errorf("%s: BilledCost adds up to %s, finance CSV %s, raw rows x rates %s", name,
							billed.FloatString(2), amounts.FloatString(2), want)
					}
				}
				for c, profile := range focusMIGProfiles {
					row := "MIG-0000000" + c + "-0000-4000-8000-00000000000" + c + ",MIG Instance,"
					sku := ",H100-80GB-HBM3/mig-" + profile + ","
					n := 0
					for _, line := range bytes.Split(exports["clickhouse"], []byte("\n")) {
						if bytes.Contains(line, []byte(row)) {
							n++
							if !bytes.Contains(line, []byte(sku)) {
								t.Errorf("a ClickHouse FOCUS row of %s lacks SkuId %s:\n%s", row, sku, line)
							}
						}
					}
					if n == 0 {
						t.Errorf("the ClickHouse FOCUS file has no %s row", row)
					}
				}
				if !bytes.Equal(exports["clickhouse"], exports["embedded"]) {
					t.Errorf("per-device FOCUS files differ between ClickHouse and the embedded ledger")
				}
			})
		}
	}
}
