package advicereport

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// TestChargesUnderPolicyQuota: what teams paid is their quota and
// above-quota lines under policy quota. Team a holds one A100 for 10 h
// against a Kueue quota of 0.5 GPU for all 24 h: 12 quota-hours at 1.00 =
// 12.00, 5 h above at 3.00 = 15.00; teams pay 27.00 of the 24 h x 2.00 =
// 48.00 the GPU costs.
func TestChargesUnderPolicyQuota(t *testing.T) {
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for h := 0; h < 24; h++ {
		s := day.Add(time.Duration(h) * time.Hour)
		r := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n1", GPUUUID: "GPU-1", GPUModel: "A100-SXM4-80GB",
			SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured", Kind: attribution.KindUnallocated, AllocatedGPUSeconds: 3600}
		if h < 10 {
			r.Kind, r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = attribution.KindContainer, "ns-a", "p", "u", "c", "a"
			r.UsedGPUSeconds = 1800
			idle := r
			idle.Kind, idle.Namespace, idle.Pod, idle.PodUID, idle.Container, idle.Team = attribution.KindUnallocated, "", "", "", "", ""
			idle.AllocatedGPUSeconds, idle.UsedGPUSeconds = 0, 0
			rows = append(rows, idle)
		}
		rows = append(rows, r)
	}
	if err := st.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	k := quota.Key{Source: quota.SourceKueue, Object: "cq-a", Resource: quota.ResourceAnyGPU}
	if err := st.AppendQuota(ctx, []quota.Change{{At: day.AddDate(0, 0, -1), Entry: quota.Entry{Key: k, Team: "a", Milli: 500}}}); err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte("currency: USD\npolicy: quota\ndefaultRate: 2.00\nquota: {source: kueue, rate: 1.00, aboveRate: 3.00}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(ctx, st, book, day, day.AddDate(0, 0, 1), nil, advise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Charges != 2700 || a.Report.Total != 4800 {
		t.Errorf("charges %d, total %d cents; want 2700 (12.00 quota + 15.00 above) of 4800", a.Charges, a.Report.Total)
	}
}
