package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// visibleText is the page's text as a reader sees it, tooltips included.
func visibleText(page string) string {
	page = regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(page, " ")
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " ")
}

func TestHTMLUsesOneIdleVocabulary(t *testing.T) {
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "timeslicing", from: from, to: to, unattributed: 0.1}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 0.5, busy: 0.5, start: from, end: to}}
	findings := []attribution.Finding{
		{Start: from, End: from.Add(time.Hour), Kind: attribution.FindingIdleAllocation, Namespace: "ads", Pod: "p", Container: "c", Team: "ads", GPUUUID: "GPU-1"},
		{Start: from, End: from.Add(time.Hour), Kind: attribution.FindingNoisyNeighbour, Namespace: "ads", Pod: "p", Container: "c", Team: "ads", GPUUUID: "GPU-1"},
	}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), findings)
	for _, policy := range []string{"allocation", "usage"} {
		for _, idle := range []string{"shared", "platform"} {
			r := mustBuild(t, st, bookFor(t, "USD", "UTC", policy, idle, map[string]string{"A100": "2"}, "2"), from, to)
			var h bytes.Buffer
			if err := WriteHTML(&h, r); err != nil {
				t.Fatal(err)
			}
			text := visibleText(h.String())
			for _, want := range []string{TermNeverAllocated, "Idle device time", "Held but unused"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s/%s: the page lacks %q", policy, idle, want)
				}
			}
			for _, bad := range AmbiguousTerms(text) {
				t.Errorf("%s/%s: ambiguous term in %q", policy, idle, bad)
			}
		}
	}
}
