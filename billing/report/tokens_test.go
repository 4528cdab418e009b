package report

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A report with the cost per token section shows it in JSON and HTML, with
// four decimals beyond the currency's; without it neither mentions tokens.
func TestTokensSection(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	var plain, plainPage bytes.Buffer
	if err := WriteJSON(&plain, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&plainPage, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), `"tokens"`) || strings.Contains(plainPage.String(), `id="tokens"`) {
		t.Fatal("a report without --prometheus shows a tokens section")
	}
	// 10 (currency) over 42 M input and 9 M output tokens.
	r.Tokens = &Tokens{Prometheus: "http://prom:9090", At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Basis: "allocated", Unpriced: 2,
		Rows: []TokenRow{{Namespace: "chat", Workload: "llama", Model: "meta-llama/Llama-3.1-8B-Instruct", Server: "vllm", Pods: 1,
			InputTokens: 42e6, OutputTokens: 9e6, Cost: big.NewRat(10, 1), PerMillionInput: big.NewRat(10, 42),
			PerMillionOutput: big.NewRat(10, 9), PerMillion: big.NewRat(10, 51)},
			{Namespace: "docs", Workload: "summarise", Server: "tgi", Pods: 2, InputTokens: 0, OutputTokens: 5e5,
				Cost: big.NewRat(1, 4), PerMillionOutput: big.NewRat(1, 2), PerMillion: big.NewRat(1, 2)}}}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tokens struct {
			Prometheus string `json:"prometheus"`
			At         string `json:"evaluated_at"`
			Basis      string `json:"cost_basis"`
			Unpriced   int    `json:"unpriced_pods"`
			Rows       []struct {
				Namespace, Workload, Model, Server string
				Pods                               int
				In                                 json.Number  `json:"input_tokens"`
				Out                                json.Number  `json:"output_tokens"`
				Cost                               json.Number  `json:"cost"`
				PerIn                              *json.Number `json:"cost_per_million_input_tokens"`
				PerOut                             *json.Number `json:"cost_per_million_output_tokens"`
				Per                                *json.Number `json:"cost_per_million_tokens"`
			} `json:"rows"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	tk := doc.Tokens
	if tk.Prometheus != "http://prom:9090" || tk.At != "2026-12-01T00:00:00Z" || tk.Basis != "allocated" || tk.Unpriced != 2 || len(tk.Rows) != 2 {
		t.Fatalf("tokens section: %+v", tk)
	}
	a, b := tk.Rows[0], tk.Rows[1]
	if a.In != "42000000" || a.Out != "9000000" || a.Cost != "10.000000" || a.PerIn == nil || *a.PerIn != "0.238095" ||
		*a.PerOut != "1.111111" || *a.Per != "0.196078" || a.Server != "vllm" || a.Workload != "llama" {
		t.Errorf("first row: %+v", a)
	}
	// No input token: no figure per input token (not zero, not infinite).
	if b.PerIn != nil || *b.PerOut != "0.500000" || b.Cost != "0.250000" || b.Pods != 2 {
		t.Errorf("second row: %+v", b)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{`id="tokens"`, "meta-llama/Llama-3.1-8B-Instruct", "<b>0.238095</b>", "<b>1.111111</b>", "http://prom:9090",
		"2 pods counted tokens but held no GPU"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// The HTML table stops at maxTokenRows rows and says how many are left.
func TestTokensSectionBoundsTheTable(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	r.Tokens = &Tokens{Prometheus: "p", Basis: "allocated"}
	for i := range maxTokenRows + 7 {
		r.Tokens.Rows = append(r.Tokens.Rows, TokenRow{Namespace: "ns", Workload: "w" + strconv.Itoa(i), Server: "vllm", Pods: 1,
			InputTokens: 1, OutputTokens: 1, Cost: big.NewRat(1, 1)})
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), "<td class=\"muted\">vllm</td>"); n != maxTokenRows {
		t.Errorf("%d rows in the HTML table, want %d", n, maxTokenRows)
	}
	if !strings.Contains(page.String(), "7 further workloads") {
		t.Error("the HTML does not say how many rows it left out")
	}
}

// A section asked for but missing (serve, Prometheus down) is one line
// saying why, in the section's place, HTML-escaped; the JSON has no
// tokens key (its absence is the answer there) and a report with the
// section shows it, not the line.
func TestTokensUnavailableLine(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	r.TokensUnavailable = `Prometheus http://prom:9090 did not answer (<dial refused>)`
	var page, j bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	want := `<p class="none" id="tokens-unavailable">Cost per token is not shown: Prometheus http://prom:9090 did not answer (&lt;dial refused&gt;)</p>`
	if !strings.Contains(page.String(), want) || strings.Contains(page.String(), `id="tokens"`) {
		t.Errorf("the page lacks %s, or has a tokens section", want)
	}
	if strings.Contains(j.String(), "tokens") {
		t.Error("the JSON mentions tokens without a section")
	}
	r.Tokens = &Tokens{Prometheus: "p", Basis: "allocated"}
	page.Reset()
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "tokens-unavailable") || !strings.Contains(page.String(), `id="tokens"`) {
		t.Error("with a section the page still shows the unavailable line")
	}
}

// The section's notes (series and workloads left out, duplicates counted
// once) show in the JSON, every one, and in the HTML, escaped, with how
// many more were counted; the rest of the section stands beside them.
func TestTokensNotes(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	r.Tokens = &Tokens{Prometheus: "p", Basis: "allocated", NotesMore: 3,
		Rows: []TokenRow{{Namespace: "chat", Workload: "llama", Server: "vllm", Pods: 1, InputTokens: 400, OutputTokens: 100, Cost: big.NewRat(10, 1),
			PerMillionInput: big.NewRat(10_000_000, 400)}},
		Notes: []TokenNote{{Namespace: "huge", Workload: "big", Pod: "big-0", Server: "vllm", Metric: "vllm:prompt_tokens_total", Model: "<m>",
			Note: "the count 1e+308 is above the maximum of 1e+15 tokens per series; the pod is left out"},
			{Namespace: "web", Workload: "web", Server: "vllm", Metric: "vllm:generation_tokens_total",
				Note: "the workload's 1001 pods sum 1.001e+18 tokens, above the maximum of 1e+18 per workload; the workload is left out"}}}
	var j, page bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tokens struct {
			Rows  []json.RawMessage `json:"rows"`
			Notes []struct {
				Namespace, Workload, Pod, Server, Metric, Model, Note string
			} `json:"notes"`
			More int `json:"notes_more"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	n := doc.Tokens.Notes
	if len(doc.Tokens.Rows) != 1 || len(n) != 2 || doc.Tokens.More != 3 || n[0].Namespace != "huge" || n[0].Pod != "big-0" || n[0].Server != "vllm" ||
		n[0].Metric != "vllm:prompt_tokens_total" || n[0].Model != "<m>" || !strings.Contains(n[0].Note, "1e+308") || n[1].Pod != "" || n[1].Workload != "web" {
		t.Errorf("JSON notes: %+v", doc.Tokens)
	}
	html := page.String()
	for _, want := range []string{`id="tokens-notes"`, "huge/big-0/vllm/vllm:prompt_tokens_total (model &lt;m&gt;): the count 1e&#43;308 is above the maximum",
		"web/web/vllm/vllm:generation_tokens_total: the workload&#39;s 1001 pods", "3 further notes", "<b>25000.000000</b>"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// No notes: no list, and the JSON's is empty, not null.
	r.Tokens.Notes, r.Tokens.NotesMore = nil, 0
	page.Reset()
	j.Reset()
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var empty struct {
		Tokens struct {
			Notes json.RawMessage `json:"notes"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(j.Bytes(), &empty); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "tokens-notes") || string(empty.Tokens.Notes) != "[]" {
		t.Errorf("an empty notes list shows, or is %s in the JSON", empty.Tokens.Notes)
	}
}

// Figures print with a bounded number of digits whatever a caller hands
// over: a cost per million tokens over a denormal count (about 2e330,
// written in 330 digits with fixed decimals) and a count of 5e-324 (324
// decimals) are written with six significant digits instead.
func TestTokensFiguresBounded(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	tiny := new(big.Rat).SetFloat64(5e-324)
	per := new(big.Rat).Quo(big.NewRat(10_000_000, 1), tiny)
	r.Tokens = &Tokens{Prometheus: "p", Basis: "allocated", Rows: []TokenRow{{Namespace: "t", Workload: "w", Server: "vllm", Pods: 1,
		InputTokens: 5e-324, OutputTokens: 1e18, Cost: big.NewRat(10, 1), PerMillionInput: per, PerMillion: big.NewRat(1, 100_000_000)}}}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tokens struct {
			Rows []struct {
				In    json.Number  `json:"input_tokens"`
				Out   json.Number  `json:"output_tokens"`
				PerIn *json.Number `json:"cost_per_million_input_tokens"`
				Per   *json.Number `json:"cost_per_million_tokens"`
			} `json:"rows"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	x := doc.Tokens.Rows[0]
	// 1e7 / 4.9406564584124654e-324 = 2.02402...e+330.
	if x.In != "4.94066e-324" || x.Out != "1000000000000000000" || x.PerIn == nil || *x.PerIn != "2.02402e+330" || *x.Per != "0.000000" {
		t.Errorf("figures: in %s out %s per input %v per all %v", x.In, x.Out, x.PerIn, x.Per)
	}
}
