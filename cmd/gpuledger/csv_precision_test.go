package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ledger.csv prints every quantity at six decimals without float noise,
// and the rounding keeps each GPU's partitions closed: its rows of an
// interval add up to the interval length within the contract's 1e-6.
func TestSimulatedLedgerCSVIsNoiseFreeAndStillPartitions(t *testing.T) {
	for _, name := range []string{"timeslicing-hostile", "churn-pidreuse"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			sc := filepath.Join("..", "..", "testdata", "scenarios", name, "scenario.yaml")
			if err := run(context.Background(), []string{"simulate", "--scenario", sc, "--out", out}, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(out, "ledger.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			checkCSVPartitions(t, recs)
		})
	}
}

func checkCSVPartitions(t *testing.T, recs [][]string) {
	t.Helper()
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	type key struct{ start, end, gpu string }
	sums := map[key][2]float64{}
	for _, r := range recs[1:] {
		k := key{r[col["interval_start"]], r[col["interval_end"]], r[col["gpu_uuid"]]}
		s := sums[k]
		for i, c := range []string{"allocated_gpu_seconds", "used_gpu_seconds"} {
			s[i] += parseSixDecimals(t, r[col[c]])
		}
		for _, c := range []string{"memory_mib_seconds", "energy_joules"} {
			parseSixDecimals(t, r[col[c]])
		}
		sums[k] = s
	}
	if len(sums) == 0 {
		t.Fatal("no ledger rows")
	}
	for k, s := range sums {
		d := mustTime(t, k.end).Sub(mustTime(t, k.start)).Seconds()
		tol := 1e-6*math.Max(d, 1) + 1e-6
		if math.Abs(s[0]-d) > tol || math.Abs(s[1]-d) > tol {
			t.Errorf("%v: partitions %v, want %v each", k, s, d)
		}
	}
}

// parseSixDecimals parses a quantity and fails when it has more than six
// decimals (float noise) or a trailing zero (not the shortest form).
func parseSixDecimals(t *testing.T, s string) float64 {
	t.Helper()
	if _, frac, ok := strings.Cut(s, "."); ok && (len(frac) > 6 || strings.HasSuffix(frac, "0")) {
		t.Fatalf("quantity %q is not the shortest six-decimal form", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
