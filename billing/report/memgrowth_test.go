package report

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// TestMemoryGrowthInReport: memory_growth episodes are grouped like the
// other findings, keep the latest episode's detail (rate, projection, who
// is at risk), and the HTML lists them in their own table.
func TestMemoryGrowthInReport(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	leak := func(start, end time.Duration, detail string) attribution.Finding {
		return attribution.Finding{Start: from.Add(start), End: from.Add(end), Kind: attribution.FindingMemoryGrowth, Node: "n1",
			GPUUUID: "G1", Namespace: "serving", Pod: "chat-api", Container: "server", Team: "inference", Detail: detail}
	}
	fs := []attribution.Finding{
		leak(5*time.Hour, 6*time.Hour, "rate_mib_per_min=150.0 exhausted_in=3h0m0s at_risk=every_tenant_of_the_gpu severity=warning"),
		leak(time.Hour, 2*time.Hour, "rate_mib_per_min=100.0 exhausted_in=9h0m0s at_risk=every_tenant_of_the_gpu severity=warning"),
	}
	// One hour of ledger, so that the page is not the empty one.
	base := attribution.Row{IntervalStart: from, IntervalEnd: from.Add(time.Hour), Node: "n1", GPUUUID: "G1", GPUModel: "L4", SliceID: "G1", SharingMode: "timeslicing"}
	c := kind(base, attribution.KindContainer, 3600, 100)
	c.Team, c.Namespace, c.Pod, c.Container = "inference", "serving", "chat-api", "server"
	rows := []attribution.Row{c, kind(base, attribution.KindIdle, 0, 3500)}
	r := mustBuild(t, &memSource{rows: rows, findings: fs}, bookFor(t, "USD", "UTC", "allocation", "platform", nil, "1"), from, to)
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v, want one memory_growth group", r.Findings)
	}
	f := r.Findings[0]
	if f.Kind != attribution.FindingMemoryGrowth || f.Episodes != 2 || f.Duration != 2*time.Hour || !strings.HasPrefix(f.Detail, "rate_mib_per_min=150.0") {
		t.Errorf("memory growth summary %+v: want 2 episodes, 2h, the later episode's detail", f)
	}
	h := renderHTML(t, r)
	for _, want := range []string{`id="memory-growth"`, "serving/chat-api", "rate_mib_per_min=150.0 exhausted_in=3h0m0s at_risk=every_tenant_of_the_gpu"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if strings.Contains(h, "No GPU memory growth in this period") {
		t.Error("HTML says there was no memory growth")
	}
}
