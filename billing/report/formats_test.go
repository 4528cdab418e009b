package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestCSVQuotingAndFormulas: labels with commas, quotes, newlines and
// formula starters survive a round trip through encoding/csv, and the
// formula starters come back with the apostrophe that neutralises them.
func TestCSVQuotingAndFormulas(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	teams := map[string]string{ // label -> what the cell must hold
		`r&d, "core"`:            `r&d, "core"`,
		"multi\nline":            "multi\nline",
		`=HYPERLINK("http://x")`: `'=HYPERLINK("http://x")`,
		"+1":                     "'+1",
		"-2+3":                   "'-2+3",
		"@SUM(A1)":               "'@SUM(A1)",
		"\tcmd":                  "'\tcmd",
		"équipe-日本":              "équipe-日本",
	}
	var rows []attribution.Row
	i := 0
	for team := range teams {
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "G" + string(rune('a'+i)),
			GPUModel: "L4", SliceID: "x", SharingMode: "exclusive"}
		c := kind(base, attribution.KindContainer, 3600, 1800)
		c.Team, c.Namespace, c.PodUID = team, "ns", "u"
		rows = append(rows, c, kind(base, attribution.KindIdle, 0, 1800))
		i++
	}
	// A model name with a formula starter, and a rate that makes the
	// rounding line negative: numbers are never neutralised.
	g := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "Gz", GPUModel: "-X", SliceID: "Gz", SharingMode: "exclusive"}
	g2 := g
	g2.GPUUUID, g2.GPUModel = "Gy", "Y"
	rows = append(rows, kind(g, attribution.KindUnallocated, 3600, 0), kind(g2, attribution.KindUnallocated, 3600, 0))
	b := bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"L4": "1.00", "-X": "0.005", "Y": "0.005"}, "1")
	r := mustBuild(t, &memSource{rows: rows}, b, s, s.Add(time.Hour))
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse back: %v\n%s", err, text)
	}
	seen := map[string]bool{}
	for _, rec := range recs[1:] {
		if len(rec) != len(CSVHeader) {
			t.Fatalf("row with %d fields: %q", len(rec), rec)
		}
		if rec[6] == "charge" {
			seen[rec[2]] = true
			if rec[12] != "1.00" {
				t.Errorf("team %q amount %s, want 1.00", rec[2], rec[12])
			}
		}
		if rec[6] == "platform" && rec[4] == "-X" {
			t.Error("model -X not neutralised")
		}
		if rec[6] == "rounding" && rec[12] != "-0.01" {
			t.Errorf("rounding amount %q, want -0.01 (numbers are not neutralised)", rec[12])
		}
	}
	for label, cell := range teams {
		if !seen[cell] {
			t.Errorf("team %q: no charge row with team cell %q (saw %v)", label, cell, seen)
		}
	}
	if !strings.Contains(text, `"r&d, ""core"""`) {
		t.Errorf("RFC 4180 quoting of a comma and quotes is missing:\n%s", text)
	}
}

// TestJSONHasTheCSVNumbers: the JSON lines carry the CSV's text exactly,
// as JSON numbers.
func TestJSONHasTheCSVNumbers(t *testing.T) {
	r := monthReport(t, "usage", "shared")
	var cbuf, jbuf bytes.Buffer
	if err := WriteCSV(&cbuf, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&jbuf, r); err != nil {
		t.Fatal(err)
	}
	recs, _ := csv.NewReader(&cbuf).ReadAll()
	var doc struct {
		Total    json.Number `json:"total"`
		Empty    bool        `json:"empty"`
		Currency string      `json:"currency"`
		Lines    []struct {
			Team       string       `json:"team"`
			LineType   string       `json:"line_type"`
			Allocated  *json.Number `json:"allocated_gpu_hours"`
			Used       *json.Number `json:"used_gpu_hours"`
			Efficiency *json.Number `json:"efficiency"`
			Amount     json.Number  `json:"amount"`
		} `json:"lines"`
		Findings []struct {
			Kind    string   `json:"kind"`
			Pod     string   `json:"pod"`
			Related []string `json:"related_pods"`
		} `json:"findings"`
	}
	dec := json.NewDecoder(&jbuf)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Lines) != len(recs)-1 || doc.Empty || doc.Currency != "USD" {
		t.Fatalf("%d JSON lines, %d CSV lines", len(doc.Lines), len(recs)-1)
	}
	str := func(n *json.Number) string {
		if n == nil {
			return ""
		}
		return string(*n)
	}
	sum := new(big.Rat)
	for i, l := range doc.Lines {
		c := recs[i+1]
		got := []string{l.Team, l.LineType, str(l.Allocated), str(l.Used), str(l.Efficiency), string(l.Amount)}
		want := []string{c[2], c[6], c[7], c[8], c[9], c[12]}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("line %d: JSON %v, CSV %v", i, got, want)
		}
		x, _ := new(big.Rat).SetString(string(l.Amount))
		sum.Add(sum, x)
	}
	if sum.FloatString(2) != string(doc.Total) {
		t.Errorf("JSON lines add up to %s, total %s", sum.FloatString(2), doc.Total)
	}
	var noisy bool
	for _, f := range doc.Findings {
		if f.Kind == attribution.FindingNoisyNeighbour && f.Pod == "backfill" {
			noisy = len(f.Related) == 31
		}
	}
	if !noisy {
		t.Error("JSON findings lack the noisy backfill pod with its 31 starved pods")
	}
}

// TestEmptyPeriod: no rows is a valid report in every form, saying so.
func TestEmptyPeriod(t *testing.T) {
	b := bookFor(t, "EUR", "Europe/Berlin", "usage", "shared", map[string]string{"L4": "1"}, "1")
	from, to, _ := Month("2026-02", b.Location)
	r := mustBuild(t, &memSource{}, b, from, to)
	if !r.Empty() || r.Total != 0 {
		t.Fatalf("empty report: %+v", r)
	}
	var c, j, h bytes.Buffer
	if err := WriteCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(c.String()); got != strings.Join(CSVHeader, ",") {
		t.Errorf("CSV = %q, want the header alone", got)
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["empty"] != true || doc["message"] != NoUsageMessage || doc["total"] != 0.0 || len(doc["lines"].([]any)) != 0 {
		t.Errorf("JSON = %s", j.String())
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "No usage in this period") || !strings.Contains(h.String(), "February 2026") {
		t.Error("HTML does not say the period had no usage")
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	b := bookFor(t, "USD", "UTC", "usage", "platform", nil, "1")
	if _, err := Build(t.Context(), &memSource{}, b, s, s); err == nil {
		t.Error("empty range accepted")
	}
	if _, err := Build(t.Context(), &memSource{}, nil, s, s.Add(time.Hour)); err == nil {
		t.Error("nil book accepted")
	}
	bad := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), GPUModel: "L4", Kind: "mystery", UsedGPUSeconds: 1}
	if _, err := Build(t.Context(), &memSource{rows: []attribution.Row{bad}}, b, s, s.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Errorf("unknown kind: %v", err)
	}
	huge := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), GPUModel: "L4", Kind: attribution.KindIdle, UsedGPUSeconds: 1e300}
	if _, err := Build(t.Context(), &memSource{rows: []attribution.Row{huge}}, b, s, s.Add(time.Hour)); err == nil {
		t.Error("absurd seconds accepted")
	}
}
