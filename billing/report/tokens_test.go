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
