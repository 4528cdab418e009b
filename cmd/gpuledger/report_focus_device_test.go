package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportFOCUSRowsPerDevice: `report --format focus` writes its rows per
// GPU and pod: on the simulated node (seven MPS tenants of one A100) every
// usage row's ResourceId is the node's GPU UUID with ResourceType GPU, and
// every charge row's AllocatedResourceId is a namespace/pod, one per
// tenant pod.
func TestReportFOCUSRowsPerDevice(t *testing.T) {
	db, _ := simulatedLedger(t)
	out := filepath.Join(t.TempDir(), "focus.csv")
	if err := runReport(context.Background(), []string{"--period", "2026-11", "--prices", pricesFile(t, "allocation"), "--ledger", db,
		"--format", "focus", "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, out)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	pods := map[string]bool{}
	for _, r := range recs[1:] {
		if r[col["x_LineType"]] == "rounding" {
			continue
		}
		if !strings.HasPrefix(r[col["ResourceId"]], "GPU-") || r[col["ResourceType"]] != "GPU" {
			t.Errorf("ResourceId %q, ResourceType %q: want the GPU's UUID", r[col["ResourceId"]], r[col["ResourceType"]])
		}
		if r[col["x_LineType"]] == "charge" {
			ns, pod, ok := strings.Cut(r[col["AllocatedResourceId"]], "/")
			if !ok || ns == "" || pod == "" {
				t.Errorf("AllocatedResourceId %q: want namespace/pod", r[col["AllocatedResourceId"]])
			}
			pods[r[col["AllocatedResourceId"]]] = true
		}
	}
	if len(pods) != 7 {
		t.Errorf("%d pods charged, want the scenario's 7: %v", len(pods), pods)
	}
}
