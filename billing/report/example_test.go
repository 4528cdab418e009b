package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
)

const exampleTestBook = "currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\ndefaultRate: 2.00\n"

// heldRows: one A100 held whole by team search, used half, each hour of
// [from, to).
func heldRows(from, to time.Time) []attribution.Row {
	var rows []attribution.Row
	for s := from; s.Before(to); s = s.Add(time.Hour) {
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "GPU-0", SliceID: "GPU-0",
			GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive", Method: attribution.MethodMeasured}
		c, idle := base, base
		c.Kind, c.Team, c.Namespace, c.Pod, c.Container, c.PodUID = attribution.KindContainer, "search", "ns", "p", "c", "u"
		c.AllocatedGPUSeconds, c.UsedGPUSeconds = 3600, 1800
		idle.Kind, idle.UsedGPUSeconds = attribution.KindIdle, 1800
		rows = append(rows, c, idle)
	}
	return rows
}

func renderAll(t *testing.T, r *Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"csv":   func(b *bytes.Buffer, r *Report) error { return WriteCSV(b, r) },
		"json":  func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) },
		"html":  func(b *bytes.Buffer, r *Report) error { return WriteHTML(b, r) },
		"focus": func(b *bytes.Buffer, r *Report) error { return WriteFOCUS(b, r) },
		"jsonl": func(b *bytes.Buffer, r *Report) error { return WriteFOCUSJSONL(b, r) },
	} {
		var b bytes.Buffer
		if err := write(&b, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.String()
	}
	return out
}

// TestExamplePricesMarked: the same ledger priced by the same rates, once
// by a user's book and once by a book marked example. The user's bill
// carries no mark at all; the example's is the user's bill plus exactly
// the mark in each format.
func TestExamplePricesMarked(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(2 * time.Hour)
	src := &memSource{rows: heldRows(from, to)}
	plainRep := mustBuild(t, src, book(t, exampleTestBook), from, to)
	exRep := mustBuild(t, src, book(t, exampleTestBook+"example: true\n"), from, to)
	if plainRep.ExamplePrices() || !exRep.ExamplePrices() {
		t.Fatalf("ExamplePrices: user's book %v, example book %v", plainRep.ExamplePrices(), exRep.ExamplePrices())
	}
	plain, ex := renderAll(t, plainRep), renderAll(t, exRep)
	for f, s := range plain {
		for _, mark := range []string{"example_prices", "x_ExamplePrices", "example-prices", "Example prices"} {
			if strings.Contains(s, mark) {
				t.Errorf("%s of the user's book carries %q", f, mark)
			}
		}
	}

	// Finance CSV: one trailing comment record as wide as the 18-column
	// header, unquoted so that a reader skipping '#' lines skips it.
	record := "# example_prices true priced with the example price book shipped with gpuledger (example: true) and not with your rates; set your own price book (docs/report.md)" + strings.Repeat(",", 17) + "\n"
	if ex["csv"] != plain["csv"]+record {
		t.Errorf("example CSV is not the user's CSV plus the example record:\n%s", ex["csv"])
	}
	if _, err := csv.NewReader(strings.NewReader(ex["csv"])).ReadAll(); err != nil {
		t.Errorf("example CSV does not read as CSV of one width: %v", err)
	}

	// JSON: example_prices true, and nothing else differs.
	var j map[string]any
	if err := json.Unmarshal([]byte(ex["json"]), &j); err != nil || j["example_prices"] != true {
		t.Errorf("JSON example_prices = %v (%v)", j["example_prices"], err)
	}
	if got := strings.Replace(ex["json"], "  \"example_prices\": true,\n", "", 1); got != plain["json"] {
		t.Errorf("example JSON differs from the user's beyond example_prices:\n%s", ex["json"])
	}

	// HTML: the banner on top of the page, nothing else differs.
	if !strings.Contains(ex["html"], "<main>\n<p id=\"example-prices\"") {
		t.Errorf("example HTML has no banner at the top of the page")
	}
	if got := strings.Replace(ex["html"], exampleBannerHTML, "", 1); got != plain["html"] {
		t.Errorf("example HTML differs from the user's beyond the banner")
	}

	// FOCUS CSV: x_ExamplePrices after x_EnergyKwh (alphabetical among
	// the x_ columns), true on every row; valid FOCUS.
	if vs, err := focusvalidate.Validate(strings.NewReader(ex["focus"])); err != nil || len(vs) > 0 {
		t.Errorf("example FOCUS file: %v %v", err, vs)
	}
	pr, _ := csv.NewReader(strings.NewReader(plain["focus"])).ReadAll()
	er, _ := csv.NewReader(strings.NewReader(ex["focus"])).ReadAll()
	if len(pr) < 2 || len(er) != len(pr) {
		t.Fatalf("FOCUS rows: user's %d, example %d", len(pr), len(er))
	}
	at := slices.Index(pr[0], "x_EnergyKwh") + 1
	for i := range pr {
		cell := "true"
		if i == 0 {
			cell = "x_ExamplePrices"
		}
		if want := slices.Insert(slices.Clone(pr[i]), at, cell); !slices.Equal(er[i], want) {
			t.Errorf("FOCUS row %d:\n got %q\nwant %q", i, er[i], want)
		}
	}

	// FOCUS JSON lines: a JSON true on every row.
	lines := strings.Split(strings.TrimSuffix(ex["jsonl"], "\n"), "\n")
	if len(lines) != len(pr)-1 {
		t.Fatalf("FOCUS JSON lines: %d, want %d", len(lines), len(pr)-1)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["x_ExamplePrices"] != true {
			t.Errorf("FOCUS JSON line %d: x_ExamplePrices = %v (%v)", i, m["x_ExamplePrices"], err)
		}
	}
}

// TestExamplePricesRecordedBook: an example book recorded in the ledger
// and in force for the first day marks the bill even when the command
// line's book, in force the second day, is the user's own.
func TestExamplePricesRecordedBook(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 2)
	st := fileLedger(t, heldRows(from, to), nil)
	ex := book(t, exampleTestBook+"example: true\n")
	own := book(t, strings.Replace(exampleTestBook, "2.40", "3.00", 1))
	record(t, st, ex, from, to)
	record(t, st, own, from.AddDate(0, 0, 1), to)
	r, err := BuildDated(context.Background(), st, own, from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	if !r.ExamplePrices() {
		t.Errorf("a bill priced in part with the recorded example book is not marked")
	}
	// The second day alone is priced by the user's book only.
	r, err = BuildDated(context.Background(), st, own, from.AddDate(0, 0, 1), to, to)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExamplePrices() {
		t.Errorf("a day priced by the user's book alone is marked example")
	}
}
