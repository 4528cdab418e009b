package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestFOCUSMatchesFinanceCSV: a month of the mixed fleet through the
// embedded store, for every policy and idle rule. The FOCUS file passes
// the validator written from the specification; it has one row per line
// of the finance CSV with that line's amount; and BilledCost (and the
// other cost columns, which equal it: no discounts) adds up to the CSV's
// total and to the hand-computed 8442.10 (TestMonthReconcilesEveryPolicy).
func TestFOCUSMatchesFinanceCSV(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	gpus, tenants := monthFleet(from, to, time.UTC)
	st := fileLedger(t, ledgerRows(gpus, tenants, 15*time.Minute), nil)
	for _, policy := range []string{"allocation", "usage"} {
		for _, idle := range []string{"platform", "shared"} {
			t.Run(policy+"/"+idle, func(t *testing.T) {
				b := monthBook(t, "UTC", policy, idle)
				r := mustBuild(t, st, b, from, to)
				var fin, fo bytes.Buffer
				if err := WriteCSV(&fin, r); err != nil {
					t.Fatal(err)
				}
				if err := WriteFOCUS(&fo, r); err != nil {
					t.Fatal(err)
				}
				violations, err := focusvalidate.Validate(bytes.NewReader(fo.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range violations {
					if i < 10 {
						t.Errorf("validator: %s", v)
					}
				}
				finRows := readTable(t, fin.Bytes())
				focusRows := readTable(t, fo.Bytes())
				if len(focusRows) != len(finRows) {
					t.Fatalf("%d FOCUS rows for %d finance lines", len(focusRows), len(finRows))
				}
				// Every finance line has its FOCUS row with the same amount.
				amounts := map[string]string{}
				for _, l := range finRows {
					amounts[strings.Join([]string{l["line_type"], l["team"], l["namespace"], l["gpu_model"], l["sharing_mode"]}, "|")] = l["amount"]
				}
				for _, f := range focusRows {
					model := ""
					if f["ResourceId"] != "" {
						model = strings.TrimPrefix(f["ResourceId"], "gpu-pool/")
					}
					ns := f["AllocatedResourceId"]
					k := strings.Join([]string{f["x_LineType"], f["x_TeamName"], ns, model, f["x_SharingMode"]}, "|")
					want, ok := amounts[k]
					if !ok {
						t.Errorf("FOCUS row %s has no finance line", k)
						continue
					}
					if f["BilledCost"] != want {
						t.Errorf("FOCUS row %s: BilledCost %s, finance amount %s", k, f["BilledCost"], want)
					}
					delete(amounts, k)
				}
				if len(amounts) > 0 {
					t.Errorf("finance lines without a FOCUS row: %v", amounts)
				}
				want := sumColumn(t, finRows, "amount")
				if want.FloatString(2) != "8442.10" {
					t.Errorf("finance CSV total %s, want 8442.10", want.FloatString(2))
				}
				for _, col := range []string{"BilledCost", "EffectiveCost", "ListCost", "ContractedCost"} {
					if got := sumColumn(t, focusRows, col); got.Cmp(want) != 0 {
						t.Errorf("sum of %s %s, finance CSV total %s", col, got.FloatString(4), want.FloatString(4))
					}
				}
				for _, f := range focusRows {
					if f["BillingPeriodStart"] != "2026-01-01T00:00:00Z" || f["BillingPeriodEnd"] != "2026-02-01T00:00:00Z" {
						t.Fatalf("billing period %s - %s", f["BillingPeriodStart"], f["BillingPeriodEnd"])
					}
					if f["x_LineType"] != "rounding" && f["AllocatedMethodId"] != "gpuledger/"+policy+"/idle-"+idle {
						t.Errorf("AllocatedMethodId %q", f["AllocatedMethodId"])
					}
				}
			})
		}
	}
}

// TestFOCUSTimesInUTC: the period is cut in the book's zone, but FOCUS
// dates are UTC with a Z: March 2026 in Los Angeles starts at 08:00Z
// (PST) and ends at 07:00Z (PDT).
func TestFOCUSTimesInUTC(t *testing.T) {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, loc), time.Date(2026, 4, 1, 0, 0, 0, 0, loc)
	gpus, tenants := monthFleet(from, to, loc)
	st := fileLedger(t, ledgerRows(gpus[:1], tenants[:2], time.Hour), nil)
	b := monthBook(t, "America/Los_Angeles", "allocation", "shared")
	var fo bytes.Buffer
	if err := WriteFOCUS(&fo, mustBuild(t, st, b, from, to)); err != nil {
		t.Fatal(err)
	}
	rows := readTable(t, fo.Bytes())
	if rows[0]["ChargePeriodStart"] != "2026-03-01T08:00:00Z" || rows[0]["ChargePeriodEnd"] != "2026-04-01T07:00:00Z" {
		t.Errorf("charge period %s - %s", rows[0]["ChargePeriodStart"], rows[0]["ChargePeriodEnd"])
	}
	if v, _ := focusvalidate.Validate(bytes.NewReader(fo.Bytes())); len(v) > 0 {
		t.Errorf("validator: %v", v)
	}
}

// TestFOCUSJSONLinesMatchCSV: the JSON-lines variant holds the CSV's
// cells: keys in the header's order, null for an empty cell, numbers with
// the CSV's digits, the key-value columns as objects.
func TestFOCUSJSONLinesMatchCSV(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	gpus, tenants := monthFleet(from, to, time.UTC)
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), nil)
	r := mustBuild(t, st, monthBook(t, "UTC", "usage", "shared"), from, to)
	var fo, jl bytes.Buffer
	if err := WriteFOCUS(&fo, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteFOCUSJSONL(&jl, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&fo).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(jl.String(), "\n"), "\n")
	if len(lines) != len(recs)-1 {
		t.Fatalf("%d JSON lines, %d CSV rows", len(lines), len(recs)-1)
	}
	kinds := map[string]string{"BilledCost": "number", "PricingQuantity": "number", "x_Efficiency": "number", "Tags": "object",
		"AllocatedMethodDetails": "object", "ChargeCategory": "string", "SkuId": "string"}
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		keys := keyOrder(t, line)
		if !slices.Equal(keys, recs[0]) {
			t.Fatalf("line %d keys %v, want %v", i+1, keys, recs[0])
		}
		for j, col := range recs[0] {
			raw, cell := string(obj[col]), recs[i+1][j]
			var got string
			switch {
			case raw == "null":
				got = ""
			case raw[0] == '"':
				if err := json.Unmarshal(obj[col], &got); err != nil {
					t.Fatal(err)
				}
				if k := kinds[col]; k != "" && k != "string" {
					t.Errorf("line %d %s is a string, want a %s", i+1, col, k)
				}
			default:
				got = raw
				if k := kinds[col]; k == "string" || (k == "number" && raw[0] == '{') || (k == "object" && raw[0] != '{') {
					t.Errorf("line %d %s = %s, want a %s", i+1, col, raw, k)
				}
			}
			if got != cell {
				t.Errorf("line %d %s = %s, CSV %q", i+1, col, raw, cell)
			}
		}
	}
}

// keyOrder lists a JSON object's top-level keys in the order written.
func keyOrder(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestFOCUSEmptyPeriodIsAnError: a period the ledger has no data for
// gives a clear error and writes nothing, where the finance CSV is its
// header alone.
func TestFOCUSEmptyPeriodIsAnError(t *testing.T) {
	st := fileLedger(t, nil, nil)
	b := monthBook(t, "UTC", "allocation", "platform")
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	r := mustBuild(t, st, b, from, to)
	for name, write := range map[string]func(io.Writer, *Report) error{"CSV": WriteFOCUS, "JSON lines": WriteFOCUSJSONL} {
		var buf bytes.Buffer
		err := write(&buf, r)
		if err == nil || !strings.Contains(err.Error(), "no data from 2026-01-01T00:00:00Z to 2026-02-01T00:00:00Z") {
			t.Fatalf("%s: err = %v, want the empty period named", name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %q", name, buf.String())
		}
	}
}

// readTable reads a CSV into one map per row, keyed by the header.
func readTable(t *testing.T, data []byte) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		out = append(out, m)
	}
	return out
}

// sumColumn adds a column's decimal text exactly.
func sumColumn(t *testing.T, rows []map[string]string, col string) *big.Rat {
	t.Helper()
	sum := new(big.Rat)
	for _, r := range rows {
		x, ok := new(big.Rat).SetString(r[col])
		if !ok {
			t.Fatalf("%s %q is not a decimal", col, r[col])
		}
		sum.Add(sum, x)
	}
	return sum
}
