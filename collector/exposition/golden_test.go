package exposition

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden from the current output")

// TestGoldenExposition pins the full text exposition of the fixture after
// three cycles: names, HELP, TYPE, label names and values.
func TestGoldenExposition(t *testing.T) {
	e := runFixture(t, 3, Options{
		BuildVersion: "1.2.3", BuildRevision: "abc123",
		PodLabelAllowlist: []string{"app.kubernetes.io/name"},
	})
	var buf bytes.Buffer
	for _, mf := range gather(t, e) {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatalf("cannot encode %s: %v", mf.GetName(), err)
		}
	}
	// The Go version is whatever built the test, not part of the contract.
	got := strings.ReplaceAll(buf.String(), `goversion="`+runtime.Version()+`"`, `goversion="GOVERSION"`)

	path := filepath.Join("testdata", "metrics.golden")
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
