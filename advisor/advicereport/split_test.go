package advicereport

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// Three actions under idle: shared, by hand:
//   - reclaim 2 whole GPUs held idle (2 → 0 GPUs), saving 480.00: both
//     GPUs can go, so 480.00 is capacity released, 0.00 moves;
//   - right-size one GPU to a 3g MIG instance (1 → 3/7 GPU), saving
//     100.00: no whole GPU is freed, the GPU stays, so 0.00 is released
//     and 100.00 moves to the other teams' share of unused capacity;
//   - consolidate 2.5 GPUs on average onto 1 (1.5 GPUs freed), saving
//     300.00: one whole GPU of the 1.5 freed, 300.00 × 1 / 1.5 = 200.00
//     released, 100.00 moves.
//
// In total 880.00: 680.00 released, 200.00 moving between teams.
func TestAdviceSplitsTheSaving(t *testing.T) {
	book, err := pricebook.Parse("p.yaml", []byte("currency: USD\npolicy: allocation\nidle: shared\nrates:\n  A100-SXM4-80GB: 2.00\ndefaultRate: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rep := &report.Report{From: from, To: to, Book: book, Total: 500000, DataFrom: from, DataTo: to,
		Lines: []report.Line{{Type: report.LineCharge, Amount: 500000}}}
	rec := func(kind advise.Kind, w string, before, after float64, saving int64) advise.Recommendation {
		return advise.Recommendation{Kind: kind, Team: "t", Namespace: "ns", Workloads: []string{"ns/" + w}, Model: "A100-SXM4-80GB",
			Before: "before", After: "after", BeforeGPUs: before, AfterGPUs: after, HeldHours: big.NewRat(600, 1), AfterHours: new(big.Rat),
			SavedHours: big.NewRat(saving, 200), Saving: big.NewRat(saving, 100), SavingMinor: saving,
			Evidence: []string{"12.0% of its replica-minutes used under 10% of what they held", "idle_allocation findings cover 3.0 h of its pods",
				"p99 per-replica usage 0.100 GPU"}}
	}
	plan := &advise.Plan{From: from, To: to, Currency: book.Currency, HeldHours: big.NewRat(1800, 1), ChargedMinor: 360000, SavingMinor: 88000,
		Recommendations: []advise.Recommendation{
			rec(advise.Reclaim, "notebook", 2, 0, 48000),
			rec(advise.Consolidate, "batch", 2.5, 1, 30000),
			rec(advise.RightSize, "infer", 1, 3.0/7, 10000),
		}}
	var page bytes.Buffer
	if err := WriteHTML(&page, &Advice{Plan: plan, Report: rep, Charges: 500000}); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	cells := func(workload string) []string {
		m := regexp.MustCompile(`ns/` + workload + `</td>.*?<td class="num"><b>([^<]*)</b></td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>`).FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("no row for %s", workload)
		}
		return m[1:]
	}
	for w, want := range map[string][3]string{"notebook": {"480.00", "480.00", "0.00"}, "batch": {"300.00", "200.00", "100.00"}, "infer": {"100.00", "0.00", "100.00"}} {
		if got := cells(w); got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("%s: saving, released, moved %v, want %v", w, got, want)
		}
	}
	for _, want := range []string{`<td class="num">880.00</td><td class="num">680.00</td><td class="num">200.00</td>`,
		"<p class=\"k\">Capacity released</p><p class=\"v\">680.00 USD</p>", "<p class=\"k\">Cost that moves between teams</p><p class=\"v\">200.00 USD</p>",
		"the other teams on that GPU model pay for the time it frees"} {
		if !strings.Contains(h, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The JSON and the text say the same split.
	a := &Advice{Plan: plan, Report: rep, Charges: 500000}
	var js, txt bytes.Buffer
	if err := WriteJSON(&js, a); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Released json.Number `json:"capacity_released"`
		Moved    json.Number `json:"cost_moved_between_teams"`
		Recs     []struct {
			Workloads []string    `json:"workloads"`
			R         json.Number `json:"capacity_released"`
			M         json.Number `json:"cost_moved_between_teams"`
		} `json:"recommendations"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Released != "680.00" || doc.Moved != "200.00" {
		t.Errorf("JSON: released %s, moved %s, want 680.00 and 200.00", doc.Released, doc.Moved)
	}
	if len(doc.Recs) != 3 {
		t.Fatalf("JSON: %d recommendations, want 3", len(doc.Recs))
	}
	wantJSON := map[string][2]json.Number{"ns/notebook": {"480.00", "0.00"}, "ns/batch": {"200.00", "100.00"}, "ns/infer": {"0.00", "100.00"}}
	for _, r := range doc.Recs {
		if w := wantJSON[r.Workloads[0]]; r.R != w[0] || r.M != w[1] {
			t.Errorf("JSON %s: released %s, moved %s, want %v", r.Workloads[0], r.R, r.M, w)
		}
	}
	if err := WriteText(&txt, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capacity released 680.00 USD", "cost that moves between teams 200.00 USD",
		"of which:   capacity released 200.00 USD, cost that moves between teams 100.00 USD"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, txt.String())
		}
	}
	// The evidence in the glossary's words.
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(h, ""), " ")
	for _, bad := range append(report.EngineerTerms(text), report.AmbiguousTerms(text)...) {
		t.Errorf("engineer's word on the advice page: %q", bad)
	}
	for _, bad := range []string{"replica-minutes", "p99 per-replica"} {
		if strings.Contains(text, bad) {
			t.Errorf("the advice page says %q", bad)
		}
	}
}

func TestSplitSaving(t *testing.T) {
	for _, c := range []struct {
		amount        int64
		before, after float64
		rel, mov      int64
	}{
		{48000, 2, 0, 48000, 0},
		{10000, 1, 3.0 / 7, 0, 10000},
		{30000, 2.5, 1, 20000, 10000},
		{100, 1.0000000001, 0, 100, 0}, // a mean a hair over one GPU
		{100, 0.9999999999, 0, 100, 0}, // and a hair under
		{100, 1, 1, 0, 100},            // nothing freed: nothing to release
		{0, 2, 0, 0, 0},
	} {
		rel, mov := report.SplitSaving(c.amount, c.before, c.after)
		if rel != c.rel || mov != c.mov {
			t.Errorf("SplitSaving(%d, %g, %g) = %d, %d; want %d, %d", c.amount, c.before, c.after, rel, mov, c.rel, c.mov)
		}
	}
}
