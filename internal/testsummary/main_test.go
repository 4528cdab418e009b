package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// testdata/gotest.json is what go test -json printed for a package with a
// passing test, an integration skip (RequireIntegration's message), a
// test's own skip and a failing test.
func TestSummaryPrintsPlainOutputAndListsIntegrationSkips(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "gotest.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	skips, err := summarise(f, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "--- FAIL: TestFails (0.00s)\n    a_test.go:10: context line\n    a_test.go:10: boom\nFAIL\nFAIL\texample.com/ts/a\t0.004s\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant plain go test's\n%q", out.String(), want)
	}
	if len(skips) != 1 || skips[0] != (Skip{Package: "example.com/ts/a", Test: "TestNeedsClickHouse",
		What: "clickhouse-server not found on PATH", How: "run make deps (Debian: apt-get install clickhouse-server)"}) {
		t.Errorf("skips %+v", skips)
	}
	var block bytes.Buffer
	writeSkips(&block, skips)
	wantBlock := "\nintegration tests skipped: 1 (what they lacked; GPULEDGER_REQUIRE_INTEGRATION=1 makes these failures)\n" +
		"  SKIP example.com/ts/a TestNeedsClickHouse: clickhouse-server not found on PATH\n" +
		"to bring what they lacked:\n  run make deps (Debian: apt-get install clickhouse-server)\n"
	if block.String() != wantBlock {
		t.Errorf("block\n%s\nwant\n%s", block.String(), wantBlock)
	}
}

// A line that is not an event (go test's own error before any package
// ran) is passed on, not lost.
func TestSummaryPassesOnTextLines(t *testing.T) {
	var out bytes.Buffer
	if _, err := summarise(bytes.NewBufferString("go: no such package\n"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "go: no such package\n" {
		t.Errorf("output %q", out.String())
	}
}

// A test that never finishes (its binary crashed or timed out) still
// shows what it printed when its package fails.
func TestSummaryShowsUnfinishedTestsOfAFailedPackage(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	var out bytes.Buffer
	if _, err := summarise(bytes.NewBufferString(in), &out); err != nil {
		t.Fatal(err)
	}
	if want := "FAIL\tp\t1.0s\npanic: test timed out after 1s\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
