package advicereport

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// layoutAdvice is a partial November (data to the 15th) with one reclaim
// whose replay finds 1500 of 36000 minutes over the proposed layout, and
// two workloads kept.
func layoutAdvice(t *testing.T) *Advice {
	t.Helper()
	book, err := pricebook.Parse("p.yaml", []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\ndefaultRate: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rep := &report.Report{From: from, To: to, Book: book, Total: 100000, DataFrom: from, DataTo: time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC),
		Lines: []report.Line{{Type: report.LineCharge, Amount: 100000}}}
	rec := func(kind advise.Kind, w string, saving int64, minutes int) advise.Recommendation {
		return advise.Recommendation{Kind: kind, Team: "t", Namespace: "ns", Workloads: []string{"ns/" + w}, Model: "A100-SXM4-80GB",
			Before: "1 replica(s)", After: "released", HeldHours: big.NewRat(150, 1), AfterHours: new(big.Rat), SavedHours: big.NewRat(150, 1),
			Saving: big.NewRat(saving, 100), SavingMinor: saving, Contention: advise.Contention{Minutes: minutes, Of: 36000, MeanExcess: 0.3, MaxExcess: 0.3},
			LatencyNote: "released: no latency to predict", Evidence: []string{w + " evidence"}}
	}
	plan := &advise.Plan{From: from, To: to, Currency: book.Currency, HeldHours: big.NewRat(450, 1), ChargedMinor: 108000, SavingMinor: 36000,
		Recommendations: []advise.Recommendation{rec(advise.Reclaim, "notebook", 36000, 1500), rec(advise.Keep, "trainer", 0, 0), rec(advise.Keep, "scorer", 0, 0)}}
	return &Advice{Plan: plan, Report: rep, Charges: 100000}
}

// The advice reads like the report: actions first, the kept workloads
// counted (and folded away in HTML), the replay labelled as the use the
// release would lose, the partial period marked in every format, and the
// HTML page under the report's stylesheet and policy.
func TestAdviceReadsLikeTheReport(t *testing.T) {
	a := layoutAdvice(t)
	var text bytes.Buffer
	if err := WriteText(&text, a); err != nil {
		t.Fatal(err)
	}
	s := text.String()
	for _, want := range []string{"partial: ledger data 2026-11-01 to 2026-11-15 only", "1 action saving 360.00 USD", "2 workloads kept as they are",
		"in 1500 of 36000 minutes replayed (use the release would have lost)", "Kept as they are (2)"} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "recommendation(s)") || strings.Contains(s, "partial: partial") {
		t.Errorf("text:\n%s", s)
	}
	if i, j := strings.Index(s, "RECLAIM"), strings.Index(s, "Kept as they are"); i < 0 || j < i {
		t.Errorf("the actions do not come first:\n%s", s)
	}

	var page bytes.Buffer
	if err := WriteHTML(&page, a); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	for _, want := range []string{`content="` + strings.ReplaceAll(report.ContentSecurityPolicy(), "'", "&#39;") + `"`, string(report.Stylesheet()),
		"<summary>Show the 2 kept workloads</summary>", `id="partial"`, "use the release would have lost", "November 2026"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %.120q", want)
		}
	}
	if i, j := strings.Index(h, `id="actions"`), strings.Index(h, "<details>"); i < 0 || j < i || strings.Contains(h, "<script") {
		t.Error("HTML: the actions are not first, or the kept workloads are not folded, or there is a script")
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, a); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Partial string `json:"partial"`
		Actions int    `json:"actions"`
		Kept    int    `json:"kept"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || !strings.HasPrefix(doc.Partial, "partial: ") || doc.Actions != 1 || doc.Kept != 2 {
		t.Errorf("JSON %+v %v", doc, err)
	}

	var prom bytes.Buffer
	if err := WriteProm(&prom, a); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(prom.String(), "\n") {
		if strings.HasPrefix(line, "gpuledger_advice_") && strings.Contains(line, "currency=") &&
			!strings.HasPrefix(line, "gpuledger_advice_saving{") && !strings.HasPrefix(line, "gpuledger_advice_saving_total{") {
			t.Errorf("a series that is not money carries a currency: %s", line)
		}
	}
}
