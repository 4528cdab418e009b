package report

import (
	"bytes"
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestParseFormat: the five names gpuledger report takes, and nothing
// else (names are case-sensitive, as the flag always was).
func TestParseFormat(t *testing.T) {
	for _, name := range []string{"csv", "json", "html", "focus", "focus-jsonl"} {
		if f, err := ParseFormat(name); err != nil || string(f) != name {
			t.Errorf("ParseFormat(%q) = %q, %v", name, f, err)
		}
	}
	for _, name := range []string{"", "pdf", "CSV", "focus-csv", "jsonl"} {
		_, err := ParseFormat(name)
		if err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "csv, json, html, focus or focus-jsonl") {
			t.Errorf("ParseFormat(%q): %v, want an error naming it and the formats", name, err)
		}
	}
}

// TestFormatFromName: the format each output file's extension names, the
// finance CSV for any other.
func TestFormatFromName(t *testing.T) {
	for name, want := range map[string]Format{
		"a.csv": FormatCSV, "a.json": FormatJSON, "a.html": FormatHTML, "A.HTM": FormatHTML, "x.jsonl": FormatFOCUSJSONL,
		"x.NDJSON": FormatFOCUSJSONL, "x.pdf": FormatCSV, "": FormatCSV, "-": FormatCSV, "dir.d/x": FormatCSV,
	} {
		if got := FormatFromName(name); got != want {
			t.Errorf("FormatFromName(%q) = %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		f    Format
		ext  string
		want bool
	}{
		{FormatCSV, ".csv", true}, {FormatFOCUS, ".CSV", true}, {FormatCSV, ".json", false}, {FormatHTML, ".htm", true},
		{FormatFOCUSJSONL, ".ndjson", true}, {FormatJSON, ".jsonl", false}, {Format("pdf"), ".pdf", false},
	} {
		if got := c.f.Holds(c.ext); got != c.want {
			t.Errorf("%s.Holds(%q) = %v, want %v", c.f, c.ext, got, c.want)
		}
	}
	for f, want := range map[Format]string{FormatCSV: ".csv", FormatFOCUS: ".csv", FormatJSON: ".json", FormatHTML: ".html", FormatFOCUSJSONL: ".jsonl", "pdf": ""} {
		if got := f.Ext(); got != want {
			t.Errorf("%q.Ext() = %q, want %q", f, got, want)
		}
	}
}

// TestWriteEveryFormat: Write writes each format as its writer does, the
// FOCUS formats one row per device (the GPU's UUID in ResourceId, which
// only the per-device aggregates name), and refuses an unknown format
// and a FOCUS file without a ledger instead of panicking.
func TestWriteEveryFormat(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-write-1",
		GPUModel: "L4", SliceID: "GPU-write-1", SharingMode: "exclusive"}
	c := kind(base, attribution.KindContainer, 3600, 1800)
	c.Team, c.Namespace, c.PodUID, c.Pod = "a", "ns", "u", "p"
	st := fileLedger(t, []attribution.Row{c, kind(base, attribution.KindIdle, 0, 1800)}, nil)
	b := bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"L4": "1.00"}, "1")
	ctx := context.Background()
	writers := map[Format]func(*bytes.Buffer, *Report) error{
		FormatCSV:        func(w *bytes.Buffer, r *Report) error { return WriteCSV(w, r) },
		FormatJSON:       func(w *bytes.Buffer, r *Report) error { return WriteJSON(w, r) },
		FormatHTML:       func(w *bytes.Buffer, r *Report) error { return WriteHTML(w, r) },
		FormatFOCUS:      func(w *bytes.Buffer, r *Report) error { return WriteFOCUS(w, r) },
		FormatFOCUSJSONL: func(w *bytes.Buffer, r *Report) error { return WriteFOCUSJSONL(w, r) },
	}
	for f, write := range writers {
		r := mustBuild(t, st, b, s, s.Add(time.Hour))
		var got bytes.Buffer
		if err := Write(ctx, &got, st, r, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := mustBuild(t, st, b, s, s.Add(time.Hour))
		if f == FormatFOCUS || f == FormatFOCUSJSONL {
			if !f.ReadsLedger() {
				t.Errorf("%s does not read the ledger", f)
			}
			if err := LoadDevices(ctx, st, want); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.String(), "GPU-write-1") {
				t.Errorf("%s: no row names the GPU: the per-device aggregates were not read\n%s", f, got.String())
			}
		}
		var wb bytes.Buffer
		if err := write(&wb, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), wb.Bytes()) {
			t.Errorf("%s: Write differs from the format's writer", f)
		}
	}
	r := mustBuild(t, st, b, s, s.Add(time.Hour))
	if err := Write(ctx, &bytes.Buffer{}, nil, r, FormatFOCUS); err == nil || !strings.Contains(err.Error(), "no ledger") {
		t.Errorf("FOCUS without a ledger: %v, want an error", err)
	}
	if err := Write(ctx, &bytes.Buffer{}, st, r, "pdf"); err == nil || !strings.Contains(err.Error(), `"pdf"`) {
		t.Errorf("format pdf: %v, want an error naming it", err)
	}
	if got := FormatCSV.ContentType(); got != "text/csv; charset=utf-8" {
		t.Errorf("CSV content type %q", got)
	}
}

// TestIsFOCUSVersion: the versions --focus-version takes.
func TestIsFOCUSVersion(t *testing.T) {
	for v, want := range map[string]bool{"1.3": true, "1.4": true, "": false, "1.2": false, "1.5": false, "1.3 ": false} {
		if got := IsFOCUSVersion(v); got != want {
			t.Errorf("IsFOCUSVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

// formatMinor writes minor units as the decimal they are, whatever the
// sign, the minor unit and the size, int64's extremes included.
func TestFormatMinorIsTheDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	values := []int64{0, 1, -1, 9, -9, 10, 99, -100, 12345, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for i := 0; i < 5000; i++ {
		values = append(values, rng.Int64()>>rng.IntN(63)*[]int64{1, -1}[rng.IntN(2)])
	}
	for _, v := range values {
		for unit := 0; unit <= 4; unit++ {
			want := new(big.Rat).SetFrac(big.NewInt(v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(unit)), nil)).FloatString(unit)
			if got := formatMinor(v, unit, false); got != want {
				t.Fatalf("formatMinor(%d, %d) = %q, want %q", v, unit, got, want)
			}
		}
	}
}
