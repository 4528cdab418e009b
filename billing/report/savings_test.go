package report

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// A report with advice attached shows it in JSON and HTML, with the
// book's money formatting; without advice neither mentions savings.
func TestSavingsSection(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	var plain bytes.Buffer
	if err := WriteJSON(&plain, r); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), `"savings"`) || strings.Contains(page.String(), `id="savings"`) {
		t.Fatal("a report without advice shows a savings section")
	}

	r.Savings = &Savings{Total: 1036800 + 44343, Problems: []string{"rows of x/y carry no GPU model: left out"},
		Recommendations: []Saving{
			{Kind: "consolidate", Team: "search", Namespace: "search", GPUModel: "A100-SXM4-80GB", Workloads: []string{"search/web", "search/embed"},
				Before: "7 × whole GPU", After: "1 GPU under MPS", BeforeGPUs: 7, AfterGPUs: 1, SavedHours: big.NewRat(4320, 1),
				Amount: 1036800, ContentionMinutes: 3, OfMinutes: 43200, Latency: "utilisation-based only: no pod metadata"},
			{Kind: "right-size", Team: "fraud", GPUModel: "H100-SXM5-80GB", Workloads: []string{"fraud/score"}, Before: "1 × whole GPU",
				After: "1 × MIG 1g.10gb", BeforeGPUs: 1, AfterGPUs: 1.0 / 7, SavedHours: big.NewRat(4320, 7), Amount: 44343,
				Incomplete: []string{"gpuledger.io/service-time: \"fast\" is not a duration"}},
		}}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Savings struct {
			Total           json.Number `json:"total"`
			Recommendations []struct {
				Kind       string      `json:"kind"`
				Workloads  []string    `json:"workloads"`
				Saving     json.Number `json:"saving"`
				SavedHours json.Number `json:"saved_gpu_hours"`
				AfterGPUs  json.Number `json:"after_gpus"`
				Incomplete []string    `json:"incomplete"`
			} `json:"recommendations"`
			Problems []string `json:"problems"`
		} `json:"savings"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Savings
	if s.Total != "10811.43" || len(s.Recommendations) != 2 || s.Recommendations[0].Saving != "10368.00" ||
		s.Recommendations[1].SavedHours != "617.142857" || s.Recommendations[1].AfterGPUs != "0.143" ||
		len(s.Recommendations[0].Incomplete) != 0 || len(s.Recommendations[1].Incomplete) != 1 || len(s.Problems) != 1 {
		t.Fatalf("savings JSON %+v", s)
	}
	page.Reset()
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	for _, want := range []string{`id="savings"`, "10,811.43", "10,368.00", "443.43", "search/web, search/embed", "1 GPU under MPS",
		"3 of 43200 min", "incomplete: gpuledger.io/service-time: &#34;fast&#34; is not a duration", "carry no GPU model"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML savings section lacks %q", want)
		}
	}
}
