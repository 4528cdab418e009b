package whatif

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// handResult is a comparison of two tenants written by hand: MIG served
// 99.5% at p50 12.5 ms, p99 40 ms; MPS served nothing (NaN latencies).
func handResult(hostile bool) *Result {
	r := &Result{Tenants: 2, Rate: 3, Service: 10 * time.Millisecond, Duration: time.Minute, Runs: 4, Seed: 9, Summaries: []Summary{
		{Mode: MIG, ServedFraction: Stat{Mean: 0.995}, P50: Stat{Mean: 0.0125, SD: 0.001}, P99: Stat{Mean: 0.040, SD: 0.002},
			Tenants: []TenantSummary{{Name: "tenant-0", ServedFraction: Stat{Mean: 1}, P50: Stat{Mean: 0.0125}, P99: Stat{Mean: 0.04}}}},
		{Mode: MPS, ServedFraction: Stat{Mean: 0}, P50: Stat{Mean: math.NaN(), SD: math.NaN()}, P99: Stat{Mean: math.NaN(), SD: math.NaN()}},
	}}
	if hostile {
		r.Hostile = &HostileReport{Index: 1, Gap: 0.5, MIGUnchanged: true,
			Modes: []HostileMode{{Mode: MIG, BenignP99: Stat{Mean: 0.04}, HostileP99: Stat{Mean: 0.04}, Change: 0}}}
	}
	return r
}

// TestWriteText: the header, one row per mechanism ("-" where nothing
// was served) and the hostile exercise's verdict, worked out by hand.
func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, handResult(true), FormatText); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"2 tenants x 3 rps, 10ms of compute per request, 1m0s per run, 4 runs (seed 9)\n",
		"99.50   12.50  1.00   40.00  2.00",
		"0.00       -     -       -     -",
		"hostile tenant-1 (2x the requests, 10x the service): p99 of the other 1 tenants",
		"MIG: well-behaved p99 unchanged, run by run. Gap, MPS minus MIG, with the hostile tenant: 500.00 ms\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteJSON: the settings, latencies in ms, null where undefined, no
// hostile key without the exercise.
func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, handResult(false), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc["tenants"] != 2.0 || doc["rate_rps"] != 3.0 || doc["service_ms"] != 10.0 || doc["duration_s"] != 60.0 || doc["runs"] != 4.0 || doc["seed"] != 9.0 {
		t.Errorf("settings %v", doc)
	}
	if _, ok := doc["hostile"]; ok {
		t.Error("a hostile key without the exercise")
	}
	modes := doc["modes"].([]any)
	mig, mps := modes[0].(map[string]any), modes[1].(map[string]any)
	if mig["mode"] != "mig" || mig["served_pct"] != 99.5 || mig["p50_ms"] != 12.5 || mig["p99_ms"] != 40.0 {
		t.Errorf("mig %v", mig)
	}
	if mps["p50_ms"] != nil || mps["p99_sd_ms"] != nil || mps["served_pct"] != 0.0 {
		t.Errorf("mps %v: want null latencies", mps)
	}
}

// TestParseFormat: text and json, nothing else.
func TestParseFormat(t *testing.T) {
	for _, name := range []string{"text", "json"} {
		if f, err := ParseFormat(name); err != nil || string(f) != name {
			t.Errorf("ParseFormat(%q) = %q, %v", name, f, err)
		}
	}
	for _, name := range []string{"", "csv", "JSON"} {
		if _, err := ParseFormat(name); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "text or json") {
			t.Errorf("ParseFormat(%q): %v", name, err)
		}
		if err := Write(&bytes.Buffer{}, handResult(false), Format(name)); err == nil {
			t.Errorf("Write in %q: no error", name)
		}
	}
}
