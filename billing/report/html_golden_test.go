package report

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.html.golden from the current output")

// TestHTMLGolden pins the whole page, charts included, byte for byte:
// the month of monthFleet, and a month of labels that must be escaped
// (markup, quotes, '+', as in the mig+timeslicing mode) or cut (a long
// name). The files were written by the page as it was before its charts
// were drawn through support/svgchart, so a change of any byte fails.
func TestHTMLGolden(t *testing.T) {
	checkHTMLGolden(t, "month.html.golden", renderHTML(t, monthReport(t, "allocation", "shared")))

	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for i, l := range []struct{ team, ns, mode string }{
		{`<b>"ml"</b> & 'vision'`, "ns-a", "mig+timeslicing"},
		{"c++ team", "ns+b", "mig+mps"},
		{"a-team-whose-name-is-much-longer-than-any-chart-label-ĉu-ne", "ns-c", "exclusive"},
	} {
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "G" + string(rune('1'+i)), GPUModel: "A100-SXM4-80GB",
			SliceID: "G" + string(rune('1'+i)), SharingMode: l.mode}
		c := kind(base, attribution.KindContainer, 3600, float64(900*(i+1)))
		c.Team, c.Namespace, c.Pod, c.Container = l.team, l.ns, "p", "c"
		rows = append(rows, c, kind(base, attribution.KindIdle, 0, 3600-float64(900*(i+1))))
	}
	r := mustBuild(t, &memSource{rows: rows}, bookFor(t, "USD", "UTC", "allocation", "platform", nil, "1"), s, s.Add(time.Hour))
	r.GeneratedAt = time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC)
	checkHTMLGolden(t, "labels.html.golden", renderHTML(t, r))
}

// checkHTMLGolden compares got with testdata/name, rewriting it under
// -update.
func checkHTMLGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("cannot write %s: %v", path, err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read %s (go test ./billing/report -run TestHTMLGolden -update creates it): %v", path, err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("page differs from %s at line %d:\nwant %.600s\ngot  %.600s", path, i+1, w, g)
			}
		}
	}
}
