package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const doc = "docs/ARCHITECTURE.md"

// TestImportsFollowTheTable: every package of the module has a row in
// docs/ARCHITECTURE.md's package table, and imports from the module only
// what its row allows.
func TestImportsFollowTheTable(t *testing.T) {
	root, module := moduleRoot(t)
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := ParseTable(f)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	pkgs := listPackages(t, root, module)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, msg := range Check(doc, table, pkgs) {
		t.Error(msg)
	}
	// A row for a package that is gone is stale.
	have := map[string]bool{}
	for _, p := range pkgs {
		have[p.Path] = true
	}
	for p, r := range table {
		if !have[p] && !onlyTests(filepath.Join(root, p)) {
			t.Errorf("%s line %d: row for package %s, which does not exist", doc, r.Line, p)
		}
	}
}

// onlyTests reports whether dir holds Go test files and no other Go file
// (a package go list leaves out of the non-test graph still exists).
func onlyTests(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "_test.go") {
			return true
		}
	}
	return false
}

// TestCheckNamesTheRowToAdd: the messages say which row to add or change.
func TestCheckNamesTheRowToAdd(t *testing.T) {
	table, err := ParseTable(strings.NewReader(`# x

| package | job | may import |
|---|---|---|
| ` + "`attribution`" + ` | maths | ` + "`gpu`" + `; otherwise stdlib |
| ` + "`gpu`, `workload`" + ` | leaves | stdlib only |
| ` + "`cmd/x`" + ` | wiring | everything: ` + "`*`" + ` |

after the table
| not | a | row |
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != 4 || !table["attribution"].Allow["gpu"] || len(table["gpu"].Allow) != 0 || table["workload"] != table["gpu"] || !table["cmd/x"].Any ||
		!table["gpu"].StdLib || table["attribution"].StdLib {
		t.Fatalf("table %+v", table)
	}
	got := Check(doc, table, []Package{
		{Path: "attribution", Imports: []string{"gpu", "sim"}},
		{Path: "gpu", External: []string{"gopkg.in/yaml.v3"}},
		{Path: "cmd/x", Imports: []string{"attribution", "sim"}},
		{Path: "billing/outbox", Imports: []string{"attribution", "billing/ledger"}},
		{Path: "internal/backoff"},
	})
	want := []string{
		"package attribution imports sim, which its row in docs/ARCHITECTURE.md (line 5) does not allow: add `sim` to that row's \"may import\" cell, or drop the import",
		"package billing/outbox has no row in docs/ARCHITECTURE.md: add the row | `billing/outbox` | <its job> | `attribution`, `billing/ledger` |",
		"package gpu imports gopkg.in/yaml.v3, but its row in docs/ARCHITECTURE.md (line 6) says standard library only",
		"package internal/backoff has no row in docs/ARCHITECTURE.md: add the row | `internal/backoff` | <its job> | stdlib only |",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{"no table here", "| package | job | may import |\n|---|---|---|\n| attribution | no backticks | x |\n",
		"| package | job | may import |\n|---|---|---|\n| `a` | x | y |\n| `a` | again | y |\n"} {
		if _, err := ParseTable(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTable(%q): no error", bad)
		}
	}
}

// moduleRoot finds the module's directory and path from go env.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("cannot run go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return filepath.Dir(gomod), strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	t.Fatalf("%s: no module line", gomod)
	return "", ""
}

// listPackages runs go list over the module and keeps each package's
// imports of the module's own packages.
func listPackages(t *testing.T, root, module string) []Package {
	t.Helper()
	cmd := exec.Command(goTool(), "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cannot run go list: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("cannot decode go list output: %v", err)
		}
		rel, ok := relative(module, p.ImportPath)
		if !ok {
			continue
		}
		pkg := Package{Path: rel}
		for _, imp := range p.Imports {
			if r, ok := relative(module, imp); ok {
				pkg.Imports = append(pkg.Imports, r)
			} else if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				pkg.External = append(pkg.External, imp)
			}
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

func relative(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

// goTool is the go command that runs the tests.
func goTool() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
