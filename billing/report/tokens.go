package report

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"math"
	"math/big"
	"strconv"
	"time"
)

// Tokens is the cost per token section: the period's exact GPU cost of
// each inference workload, from the ledger, divided by the tokens its
// servers counted in the same period, from Prometheus (package
// billing/tokencost builds it; docs/tokens.md).
type Tokens struct {
	// Prometheus is the server the tokens came from (no credentials), At
	// the instant the month's increase was evaluated (the period's end).
	Prometheus string
	At         time.Time
	// Basis names the GPU-hours a pod's cost is taken from: "allocated"
	// or "used" (the book's policy).
	Basis string
	Rows  []TokenRow
	// Unpriced counts (namespace, pod) pairs that counted tokens but hold
	// no GPU in the ledger over the period (a CPU-only server, a pod on a
	// node without the collector).
	Unpriced int
	// Notes name the series and workloads left out because their counts
	// were absurd, and the series Prometheus returned twice with different
	// values (docs/tokens.md, "Absurd counts"): at most MaxTokenNotes, in
	// namespace, workload, pod, server, metric order; NotesMore counts the
	// rest.
	Notes     []TokenNote
	NotesMore int
}

// MaxTokenNotes bounds the notes a token section lists.
const MaxTokenNotes = 100

// TokenNote is one series (or, with Pod empty, one workload's sum) the
// section left out or counted once, and why.
type TokenNote struct {
	Namespace, Workload, Pod, Server, Metric, Model string
	// Note says what was wrong and what was done, with any value written
	// to at most six significant digits.
	Note string
}

// TokenRow is one workload serving one model: its pods' exact GPU cost
// and their tokens over the period.
type TokenRow struct {
	Namespace, Workload, Model, Server string
	Pods                               int
	// InputTokens and OutputTokens are the period's prompt and generated
	// tokens (Prometheus increase, so fractional where it extrapolated).
	InputTokens, OutputTokens float64
	// Cost is the pods' exact cost over the period in the book's currency
	// (split between models by token share where a pod served several).
	Cost *big.Rat
	// PerMillionInput and PerMillionOutput divide the whole cost by the
	// millions of input (output) tokens; PerMillion by both together. Nil
	// where that count is zero.
	PerMillionInput, PerMillionOutput, PerMillion *big.Rat
}

// tokenDecimals are the decimals a cost per million tokens is written
// with beyond the currency's minor unit: such costs are often fractions of
// a cent.
const tokenDecimals = 4

// maxTokenFigure bounds the figures written with fixed decimals: larger
// ones (which billing/tokencost's bounds on counts rule out) are written
// with tokenDigits significant digits in exponent form, so no figure is
// ever longer than a few dozen characters.
const (
	maxTokenFigure = 1e15
	tokenDigits    = 6
)

func (r *Report) tokenMoney(x *big.Rat) string {
	if x == nil {
		return ""
	}
	if new(big.Rat).Abs(x).Cmp(new(big.Rat).SetFloat64(maxTokenFigure)) >= 0 {
		return new(big.Float).SetRat(x).Text('e', tokenDigits-1)
	}
	return x.FloatString(r.Book.Currency.MinorUnit + tokenDecimals)
}

// tokenCount writes a count as the shortest decimal that reads back the
// same (at most 17 significant digits), without an exponent within the
// bounds billing/tokencost holds counts to (zero, or half a token to
// 1e18), with one outside them.
func tokenCount(x float64) string {
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21 || math.IsNaN(a)) {
		return strconv.FormatFloat(x, 'g', tokenDigits, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

type jsonTokens struct {
	Prometheus string          `json:"prometheus"`
	At         string          `json:"evaluated_at"`
	Basis      string          `json:"cost_basis"`
	Unpriced   int             `json:"unpriced_pods"`
	Rows       []jsonTokensRow `json:"rows"`
	Notes      []jsonTokenNote `json:"notes"`
	NotesMore  int             `json:"notes_more"`
}

type jsonTokenNote struct {
	Namespace string `json:"namespace"`
	Workload  string `json:"workload"`
	Pod       string `json:"pod"`
	Server    string `json:"server"`
	Metric    string `json:"metric"`
	Model     string `json:"model"`
	Note      string `json:"note"`
}

type jsonTokensRow struct {
	Namespace        string       `json:"namespace"`
	Workload         string       `json:"workload"`
	Model            string       `json:"model"`
	Server           string       `json:"server"`
	Pods             int          `json:"pods"`
	InputTokens      json.Number  `json:"input_tokens"`
	OutputTokens     json.Number  `json:"output_tokens"`
	Cost             json.Number  `json:"cost"`
	PerMillionInput  *json.Number `json:"cost_per_million_input_tokens"`
	PerMillionOutput *json.Number `json:"cost_per_million_output_tokens"`
	PerMillion       *json.Number `json:"cost_per_million_tokens"`
}

func tokensJSON(r *Report) *jsonTokens {
	t := r.Tokens
	if t == nil {
		return nil
	}
	j := &jsonTokens{Prometheus: t.Prometheus, At: t.At.UTC().Format(time.RFC3339), Basis: t.Basis, Unpriced: t.Unpriced, Rows: []jsonTokensRow{},
		Notes: []jsonTokenNote{}, NotesMore: t.NotesMore}
	for _, n := range t.Notes {
		j.Notes = append(j.Notes, jsonTokenNote(n))
	}
	for _, x := range t.Rows {
		j.Rows = append(j.Rows, jsonTokensRow{Namespace: x.Namespace, Workload: x.Workload, Model: x.Model, Server: x.Server, Pods: x.Pods,
			InputTokens: num(tokenCount(x.InputTokens)), OutputTokens: num(tokenCount(x.OutputTokens)),
			Cost: num(r.tokenMoney(x.Cost)), PerMillionInput: optNum(r.tokenMoney(x.PerMillionInput)),
			PerMillionOutput: optNum(r.tokenMoney(x.PerMillionOutput)), PerMillion: optNum(r.tokenMoney(x.PerMillion))})
	}
	return j
}

// maxTokenRows bounds the HTML section's table (largest cost first); the
// JSON lists every row.
const maxTokenRows = 100

// tokensPage is the HTML section's data; nil without --prometheus.
type tokensPage struct {
	Currency, Prometheus, At, Basis string
	Unpriced, More                  int
	Rows                            []tokensRow
	Notes                           []TokenNote
	NotesMore                       int
}

type tokensRow struct {
	Namespace, Workload, Model, Server string
	Pods                               int
	Input, Output, Cost                string
	PerInput, PerOutput, PerAll        string
}

func tokensSection(r *Report) *tokensPage {
	t := r.Tokens
	if t == nil {
		return nil
	}
	p := &tokensPage{Currency: r.Book.Currency.Code, Prometheus: t.Prometheus, At: t.At.UTC().Format(time.RFC3339), Basis: t.Basis, Unpriced: t.Unpriced,
		Notes: t.Notes, NotesMore: t.NotesMore}
	dash := func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	}
	for i, x := range t.Rows {
		if i == maxTokenRows {
			p.More = len(t.Rows) - i
			break
		}
		p.Rows = append(p.Rows, tokensRow{Namespace: x.Namespace, Workload: x.Workload, Model: dash(x.Model), Server: x.Server, Pods: x.Pods,
			Input: tokenCount(x.InputTokens), Output: tokenCount(x.OutputTokens), Cost: r.tokenMoney(x.Cost),
			PerInput: dash(r.tokenMoney(x.PerMillionInput)), PerOutput: dash(r.tokenMoney(x.PerMillionOutput)), PerAll: dash(r.tokenMoney(x.PerMillion))})
	}
	return p
}

//go:embed tokens.html.tmpl
var tokensHTML string

// The section is its own template in the page's set, so the page template
// only names it.
var _ = template.Must(pageTemplate.New("tokens").Parse(tokensHTML))
