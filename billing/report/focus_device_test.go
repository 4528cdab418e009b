package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
	"github.com/gpuledger/gpuledger/workload"
)

// migFleetSkus are the SkuIds migFleet's MIG instances must get: two
// with the profile their rows carry, one whose rows carry none (stored
// before the ledger recorded profiles).
var migFleetSkus = map[string]string{
	"MIG-00000000-0000-4000-8000-000000000000": "A100-SXM4-80GB/mig-3g.40gb",
	"MIG-00000001-0000-4000-8000-000000000001": "A100-SXM4-80GB/mig-1g.10gb+me",
	"MIG-00000002-0000-4000-8000-000000000002": "A100-SXM4-80GB/mig",
}

// migFleet is monthFleet's rows with the MIG A100's tenants on MIG
// instances (MIG-<uuid> slices, as the device plugin lists them, with the
// profiles of migFleetSkus) and memory held, so memory-weighted books
// have something to weigh.
func migFleet(t *testing.T, from, to time.Time) []attribution.Row {
	gpus, tenants := monthFleet(from, to, time.UTC)
	for i := range tenants {
		tenants[i].memMiB = float64(1024 * (1 + i%7))
	}
	rows := ledgerRows(gpus, tenants, 15*time.Minute)
	for i := range rows {
		r := &rows[i]
		if r.SharingMode == "mig" && r.Kind == attribution.KindContainer {
			var n int
			if _, err := fmt.Sscanf(r.SliceID[strings.LastIndex(r.SliceID, "::")+2:], "%d", &n); err != nil {
				t.Fatal(err)
			}
			r.SliceID = fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", n%3, n%3)
			r.MIGProfile = []string{"3g.40gb", "1g.10gb+me", ""}[n%3]
		}
	}
	return rows
}

// focusDeviceBooks are every policy and idle rule: allocation and usage
// with both idle rules, memory-weighted usage with both, flat with both.
func focusDeviceBooks(t *testing.T) map[string]*pricebook.Book {
	out := map[string]*pricebook.Book{}
	rates := "rates: {A100-SXM4-80GB: 2.40, H100-SXM5-80GB: 4.123456789, L4: 0.70}\n"
	for _, idle := range []string{"platform", "shared"} {
		for _, policy := range []string{"allocation", "usage"} {
			out[policy+"/"+idle] = monthBook(t, "UTC", policy, idle)
		}
		out["memory/"+idle] = book(t, "currency: USD\npolicy: usage\nidle: "+idle+"\nmemoryWeight: 0.3\ndefaultRate: 1\n"+rates+
			"memoryMiB: {A100-SXM4-80GB: 81920, H100-SXM5-80GB: 81920, L4: 23034}\n")
		out["flat/"+idle] = book(t, "currency: USD\npolicy: flat\nidle: "+idle+"\nslotRates: {A100-SXM4-80GB: 800.00, H100-SXM5-80GB: 1200.00, L4: 300.00}\n")
	}
	return out
}

// TestFOCUSPerDeviceMatchesFinanceCSV: the per-device FOCUS file of a
// month, for every policy and idle rule. It passes the validator; the rows
// of each finance line (told apart by line type, team, namespace, model
// and mode) add up to that line's amount exactly, and BilledCost to the
// finance CSV's total; every usage row names a GPU or MIG instance; and
// under the allocation policy each charge row costs its device's own
// allocated hours, summed here from the raw rows, at the model's rate, to
// less than one cent.
func TestFOCUSPerDeviceMatchesFinanceCSV(t *testing.T) {
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	rows := migFleet(t, from, to)
	st := fileLedger(t, rows, nil)
	// The allocated hours of each (team, namespace, resource, pod), from
	// the raw rows.
	own := map[string]float64{}
	for _, r := range rows {
		if r.Kind != attribution.KindContainer {
			continue
		}
		res := r.GPUUUID
		if strings.HasPrefix(r.SliceID, "MIG-") {
			res = r.SliceID
		}
		own[r.Team+"|"+r.Namespace+"/"+r.Pod+"|"+res] += r.AllocatedGPUSeconds / 3600
	}
	for name, b := range focusDeviceBooks(t) {
		t.Run(name, func(t *testing.T) {
			r := mustBuild(t, st, b, from, to)
			if err := LoadDevices(context.Background(), st, r); err != nil {
				t.Fatal(err)
			}
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
			finRows, focusRows := readTable(t, fin.Bytes()), readTable(t, fo.Bytes())
			if len(focusRows) <= len(finRows) {
				t.Errorf("%d FOCUS rows for %d finance lines: not split", len(focusRows), len(finRows))
			}
			want := map[string]*big.Rat{}
			for _, l := range finRows {
				k := strings.Join([]string{l["line_type"], l["team"], l["namespace"], l["gpu_model"], l["sharing_mode"]}, "|")
				want[k], _ = new(big.Rat).SetString(l["amount"])
			}
			got := map[string]*big.Rat{}
			types := map[string]int{}
			for _, f := range focusRows {
				var tags map[string]string
				model := ""
				if f["Tags"] != "" {
					if err := json.Unmarshal([]byte(f["Tags"]), &tags); err != nil {
						t.Fatal(err)
					}
					model = tags["gpuledger/gpu-model"]
				}
				ns, pod, _ := strings.Cut(f["AllocatedResourceId"], "/")
				k := strings.Join([]string{f["x_LineType"], f["x_TeamName"], ns, model, f["x_SharingMode"]}, "|")
				x, _ := new(big.Rat).SetString(f["BilledCost"])
				if got[k] == nil {
					got[k] = new(big.Rat)
				}
				got[k].Add(got[k], x)
				if f["x_LineType"] == "rounding" {
					continue
				}
				types[f["ResourceType"]]++
				if strings.HasPrefix(f["ResourceId"], "gpu-pool/") || f["ResourceId"] == "" {
					t.Errorf("row %s has ResourceId %q, want a GPU or MIG UUID", k, f["ResourceId"])
				}
				wantSku, mig := migFleetSkus[f["ResourceId"]]
				if !mig {
					wantSku = model
				}
				if (f["ResourceType"] == "MIG Instance") != mig || f["SkuId"] != wantSku {
					t.Errorf("row %s: ResourceId %q, type %q, SkuId %q, want SkuId %q", k, f["ResourceId"], f["ResourceType"], f["SkuId"], wantSku)
				}
				if f["x_LineType"] != "platform" {
					var at map[string]string
					if err := json.Unmarshal([]byte(f["AllocatedTags"]), &at); err != nil {
						t.Fatalf("row %s AllocatedTags %q: %v", k, f["AllocatedTags"], err)
					}
					if pod == "" || at["team"] != f["x_TeamName"] || at["gpuledger/namespace"] != ns || at["gpuledger/workload"] != workload.FromPod(pod) {
						t.Errorf("row %s: AllocatedResourceId %q, AllocatedTags %v", k, f["AllocatedResourceId"], at)
					}
				}
				if b.Policy == pricebook.PolicyAllocation && f["x_LineType"] == "charge" {
					rate, _ := new(big.Rat).SetString(f["ListUnitPrice"])
					h := own[f["x_TeamName"]+"|"+f["AllocatedResourceId"]+"|"+f["ResourceId"]]
					exact := new(big.Rat).Mul(new(big.Rat).SetFloat64(h), rate)
					if d, _ := new(big.Rat).Sub(exact, x).Float64(); d <= -0.01 || d >= 0.01 {
						t.Errorf("row %s on %s: BilledCost %s, own hours %.6f x %s = %s", k, f["ResourceId"], f["BilledCost"], h, f["ListUnitPrice"], exact.FloatString(4))
					}
				}
			}
			for k, w := range want {
				if got[k] == nil || got[k].Cmp(w) != 0 {
					t.Errorf("line %s: FOCUS rows add up to %v, finance amount %s", k, got[k], w.FloatString(2))
				}
				delete(got, k)
			}
			if len(got) > 0 {
				t.Errorf("FOCUS rows without a finance line: %v", got)
			}
			if s, w := sumColumn(t, focusRows, "BilledCost"), sumColumn(t, finRows, "amount"); s.Cmp(w) != 0 {
				t.Errorf("BilledCost adds up to %s, finance CSV %s", s.FloatString(2), w.FloatString(2))
			}
			if types["GPU"] == 0 || types["MIG Instance"] == 0 {
				t.Errorf("resource types %v, want GPUs and MIG instances", types)
			}
		})
	}
}

// TestApportionPartsAddsUp: a line's parts add up to its amount whatever
// the weights, and each part is within one minor unit of its exact share.
func TestApportionPartsAddsUp(t *testing.T) {
	scale := big.NewRat(100, 1)
	for _, c := range []struct {
		exact   string
		amount  int64
		weights []int64
	}{
		{"10.005", 1001, []int64{1, 1, 1}},
		{"10.005", 1000, []int64{1, 1, 1}},
		{"0.02", 2, []int64{1, 1, 1, 1, 1, 1, 1}},
		{"123.456789", 12346, []int64{7, 0, 3, 1}},
		{"0", 0, []int64{5, 5}},
	} {
		exact, _ := new(big.Rat).SetString(c.exact)
		l := Line{Type: LineCharge, Exact: exact, Amount: c.amount, Charged: big.NewRat(10, 1)}
		var shares []*devShare
		for i, w := range c.weights {
			shares = append(shares, &devShare{dev: device{gpu: fmt.Sprint("GPU-", i)}, weight: big.NewRat(w, 1)})
		}
		parts := partsOf(l, shares, scale)
		var sum int64
		total := int64(0)
		for _, w := range c.weights {
			total += w
		}
		for _, p := range parts {
			sum += p.amount
		}
		if sum != c.amount {
			t.Errorf("%s: parts add up to %d, want %d", c.exact, sum, c.amount)
		}
		for i, p := range parts {
			_ = i
			share := new(big.Rat).Mul(exact, scale)
			share.Mul(share, new(big.Rat).Quo(p.charged, l.Charged))
			if d, _ := new(big.Rat).Sub(share, big.NewRat(p.amount, 1)).Float64(); d <= -1 || d >= 1 {
				t.Errorf("%s: part %d is %d, exact share %s", c.exact, i, p.amount, share.FloatString(4))
			}
		}
	}
}
