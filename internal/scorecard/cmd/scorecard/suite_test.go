package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin stands in for gpuledger: `simulate --scenario S --out O` copies
// the ledger.csv and flags.csv lying beside S into O, or fails loudly when
// a file named crash lies there.
const fakeBin = `#!/bin/sh
[ "$1" = simulate ] && [ "$2" = --scenario ] && [ "$4" = --out ] || { echo "bad arguments: $*" >&2; exit 64; }
d=$(dirname "$3")
[ -e "$d/scenario.yaml" ] || { echo "no scenario $3" >&2; exit 65; }
if [ -e "$d/crash" ]; then echo "boom: cannot simulate" >&2; exit 3; fi
cp "$d/ledger.csv" "$d/flags.csv" "$5/"
`

// corpus writes three scenarios built from the scorecard's good fixture:
// one that passes, one whose truth names another team, one whose
// simulation crashes.
func corpus(t *testing.T) (bin, dir string) {
	t.Helper()
	root := t.TempDir()
	bin = filepath.Join(root, "gpuledger")
	if err := os.WriteFile(bin, []byte(fakeBin), 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "scenarios")
	for _, name := range []string{"a-pass", "b-team", "c-crash"} {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"truth.json", "ledger.csv", "flags.csv"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "good", f))
			if err != nil {
				t.Fatal(err)
			}
			if name == "b-team" && f == "truth.json" {
				b = bytes.Replace(b, []byte(`"team": "ads"`), []byte(`"team": "search"`), 1)
			}
			write(t, filepath.Join(d, f), string(b))
		}
		write(t, filepath.Join(d, "scenario.yaml"), "name: "+name+"\n")
	}
	write(t, filepath.Join(dir, "c-crash", "crash"), "")
	write(t, filepath.Join(dir, "README.md"), "not a scenario\n")
	return bin, dir
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSuiteReportsEachScenarioAndTheSummary(t *testing.T) {
	bin, dir := corpus(t)
	var out bytes.Buffer
	ok, err := suite{bin: bin, scenarios: dir, out: t.TempDir(), w: &out}.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("run reported success with two failing scenarios")
	}
	text := out.String()
	// The fixture's worst used error is m/p/c's: 100 s measured, 102 true.
	summary := fmt.Sprintf("scenarios: 1/3 pass; worst used error %.2f%%", 100*2.0/102)
	for _, want := range []string{
		"ok   a-pass ",
		"FAIL b-team ",
		"    m/p/c: team [ads] vs search\n",
		"FAIL c-crash ",
		"boom: cannot simulate",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; last != summary {
		t.Errorf("last line %q, want %q", last, summary)
	}
}

func TestSuiteFilterAndSuccess(t *testing.T) {
	bin, dir := corpus(t)
	var out bytes.Buffer
	ok, err := suite{bin: bin, scenarios: dir, out: t.TempDir(), filter: "a-", w: &out}.run(context.Background())
	if err != nil || !ok {
		t.Fatalf("run = %v, %v:\n%s", ok, err, out.String())
	}
	if !strings.HasSuffix(out.String(), "scenarios: 1/1 pass; worst used error 1.96%\n") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestSuiteWithoutScenariosIsAnError(t *testing.T) {
	bin, _ := corpus(t)
	_, err := suite{bin: bin, scenarios: t.TempDir(), out: t.TempDir(), w: &bytes.Buffer{}}.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no scenario directories") {
		t.Errorf("err = %v", err)
	}
}
