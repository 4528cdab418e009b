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
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 0.5, busy: 0.5, memMiB: 40000, start: from, end: to}}
	findings := []attribution.Finding{
		{Start: from, End: from.Add(time.Hour), Kind: attribution.FindingIdleAllocation, Namespace: "ads", Pod: "p", Container: "c", Team: "ads", GPUUUID: "GPU-1"},
		{Start: from, End: from.Add(time.Hour), Kind: attribution.FindingNoisyNeighbour, Namespace: "ads", Pod: "p", Container: "c", Team: "ads", GPUUUID: "GPU-1"},
	}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), findings)
	books := map[string]string{
		"allocation": "policy: allocation\nrates: {A100: 2}\ndefaultRate: 2\n",
		"usage":      "policy: usage\nrates: {A100: 2}\ndefaultRate: 2\n",
		"memory":     "policy: usage\nmemoryWeight: 0.3\nmemoryMiB: {A100: 81920}\nrates: {A100: 2}\ndefaultRate: 2\n",
		"flat":       "policy: flat\nslotRates: {A100: 800}\n",
	}
	for _, policy := range sortedKeys(books) {
		for _, idle := range []string{"shared", "platform"} {
			r := mustBuild(t, st, book(t, "currency: USD\nidle: "+idle+"\n"+books[policy]), from, to)
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
			for _, bad := range EngineerTerms(text) {
				t.Errorf("%s/%s: a column name or contract value where the glossary has a word: %q", policy, idle, bad)
			}
		}
	}
}
