package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

// TestReportFOCUSSkuNamesMIGProfiles: on a simulated MIG node (the migmix
// example: a 3g.40gb, a 2g.20gb and a 1g.10gb instance, time-sliced) the
// FOCUS file's rows for each MIG instance carry the profile the scenario
// gives that instance, read here from the scenario file itself, in
// SkuId and SkuPriceId; the file passes the validator.
func TestReportFOCUSSkuNamesMIGProfiles(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "examples", "migmix-107", "scenario.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		GPUs []struct {
			Model        string                           `yaml:"model"`
			MIGInstances []struct{ UUID, Profile string } `yaml:"migInstances"`
		} `yaml:"gpus"`
	}
	if err := yaml.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, g := range sc.GPUs {
		for _, m := range g.MIGInstances {
			want[m.UUID] = g.Model + "/mig-" + m.Profile
		}
	}
	if len(want) != 3 {
		t.Fatalf("scenario has %d MIG instances, want 3", len(want))
	}

	out := t.TempDir()
	if err := run(context.Background(), []string{"simulate", "--scenario", path, "--out", out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	fo := filepath.Join(out, "focus.csv")
	if err := runReport(context.Background(), []string{"--period", "2026-11", "--prices", pricesFile(t, "allocation"),
		"--ledger", filepath.Join(out, "ledger.db"), "--format", "focus", "--out", fo}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fo)
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := focusvalidate.Validate(bytes.NewReader(data)); err != nil || len(vs) > 0 {
		t.Fatalf("validator: %v %v", vs, err)
	}
	recs := readCSV(t, fo)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if r[col["ResourceType"]] != "MIG Instance" {
			continue
		}
		id, sku := r[col["ResourceId"]], r[col["SkuId"]]
		if sku != want[id] {
			t.Errorf("MIG instance %s: SkuId %q, want %q", id, sku, want[id])
		}
		if p := r[col["SkuPriceId"]]; p != want[id]+"/USD/3600.00" {
			t.Errorf("MIG instance %s: SkuPriceId %q, want %q", id, p, want[id]+"/USD/3600.00")
		}
		seen[id] = true
	}
	if len(seen) != len(want) {
		t.Errorf("FOCUS rows name %d of the %d MIG instances: %v", len(seen), len(want), seen)
	}
}
