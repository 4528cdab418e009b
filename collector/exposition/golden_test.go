package exposition

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden from the current output")

// TestGoldenExposition pins the full text exposition of the fixture after
// three cycles: names, HELP, TYPE, label names and values. The registry
// path (gathered and encoded by expfmt) and Handler's text writer must both
// produce exactly testdata/metrics.golden; Handler's OpenMetrics output is
// pinned in testdata/metrics.om.golden.
func TestGoldenExposition(t *testing.T) {
	opts := Options{
		BuildVersion: "1.2.3", BuildRevision: "abc123",
		PodLabelAllowlist: []string{"app.kubernetes.io/name"},
	}
	e := runFixture(t, 3, opts)
	var buf bytes.Buffer
	for _, mf := range gather(t, e) {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatalf("cannot encode %s: %v", mf.GetName(), err)
		}
	}
	checkGolden(t, "metrics.golden", buf.String())

	// Handler without the Go and process families, which change.
	e.handler.runtime = prometheus.NewRegistry()
	checkGolden(t, "metrics.golden", serve(e.Handler(), acceptText, "", "").Body.String())
	checkGolden(t, "metrics.om.golden", serve(e.Handler(), acceptPrometheus2, "", "").Body.String())
}

// checkGolden compares got with testdata/name, rewriting it under -update.
// The Go version is whatever built the test, not part of the contract.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, `goversion="`+runtime.Version()+`"`, `goversion="GOVERSION"`)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("cannot write %s: %v", path, err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read %s (run go test ./collector/exposition -update to create it): %v", path, err)
	}
	if got != string(want) {
		t.Errorf("exposition differs from %s (go test ./collector/exposition -update to accept):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if g[l] == 0 {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w[l] == 0 {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
