package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestWhatifJSON: the documented command line prints the three modes in the
// reference model's order with served_pct, p50_ms and p99_ms; --seed replays and
// another seed does not.
func TestWhatifJSON(t *testing.T) {
	args := []string{"whatif", "--tenants", "7", "--rate", "12", "--service", "10ms", "--duration", "60s", "--runs", "8", "--format", "json"}
	var a, b, c bytes.Buffer
	if err := run(context.Background(), args, &a); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), args, &b); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), append(args, "--seed", "8"), &c); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("same seed, different output")
	}
	if a.String() == c.String() {
		t.Error("--seed 8 gave the output of seed 7")
	}
	var doc struct {
		Modes []struct {
			Mode      string   `json:"mode"`
			ServedPct *float64 `json:"served_pct"`
			P50       *float64 `json:"p50_ms"`
			P99       *float64 `json:"p99_ms"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(a.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"mig", "mps", "timeslicing"}
	if len(doc.Modes) != 3 {
		t.Fatalf("%d modes, want 3", len(doc.Modes))
	}
	for i, m := range doc.Modes {
		if m.Mode != want[i] || m.ServedPct == nil || m.P50 == nil || m.P99 == nil {
			t.Fatalf("mode %d: %+v", i, m)
		}
		if *m.ServedPct < 99 || *m.ServedPct > 100 || *m.P50 <= 0 || *m.P99 < *m.P50 {
			t.Errorf("%s: served %v%% p50 %v p99 %v", m.Mode, *m.ServedPct, *m.P50, *m.P99)
		}
	}
	// MPS p50 is S(1+0.18) = 11.8 ms (see advisor/whatif TestSeedTable).
	if p := *doc.Modes[1].P50; p < 11.7 || p > 11.9 {
		t.Errorf("mps p50 %v ms, want 11.8", p)
	}
}

func TestWhatifHostileText(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"whatif", "--runs", "4", "--hostile"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"hostile tenant-6", "MIG: well-behaved p99 unchanged, run by run", "Gap, MPS minus MIG"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestWhatifBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, "want text or json"},
		{[]string{"--tenants", "0"}, "--tenants 0"},
		{[]string{"--rate", "-1"}, "arrival rate"},
		{[]string{"--service", "0s"}, "service time"},
		{[]string{"--duration", "-1s"}, "duration"},
		{[]string{"--runs", "0"}, "runs"},
		{[]string{"--mode", "hami"}, "want mig, mps or timeslicing"},
		{[]string{"--tenants", "2", "--mig-slices", "1"}, "names 1 instances for 2"},
		{[]string{"--tenants", "2", "--mig-slices", "4,4"}, "more than the card"},
		{[]string{"--tenants", "2", "--mig-slices", "1,x"}, "1 to 7"},
		{[]string{"--mps-contention", "0"}, "positive"},
		{[]string{"--tenants", "1", "--hostile"}, "at least 2"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		err := run(context.Background(), append([]string{"whatif"}, c.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
