package archtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const doc = "docs/ARCHITECTURE.md"

// TestImportsFollowTheTable: every package of the module has a row in
// docs/ARCHITECTURE.md's package table, imports only what its row allows,
// and every edge a row allows is used.
func TestImportsFollowTheTable(t *testing.T) {
	_, table, pkgs := repo(t)
	for _, msg := range Check(doc, table, pkgs) {
		t.Error(msg)
	}
}

// TestForbiddenImportsFail: imports the table forbids, each added to the
// module's real import graph, make the check fail with one message naming
// the package, the import and the row. These five once passed.
func TestForbiddenImportsFail(t *testing.T) {
	root, table, pkgs := repo(t)
	for _, c := range []struct {
		pkg, imp, module string // module "": one of this module's packages
	}{
		{"advisor/whatif", "github.com/prometheus/common/model", "github.com/prometheus/common"},
		{"internal/focusvalidate", "go.yaml.in/yaml/v3", "go.yaml.in/yaml/v3"},
		{"collector/procfs", "k8s.io/client-go/rest", "k8s.io/client-go"},
		{"ledger/outbox", "ledger/clickhouse", ""},
		{"ledger/clickhouse", "billing/pricebook", ""}, // storage never imports money
	} {
		t.Run(c.pkg, func(t *testing.T) {
			g := withPackage(t, pkgs, c.pkg, func(p *Package) {
				if c.module == "" {
					p.Imports = append(p.Imports, c.imp)
				} else {
					p.External = append(p.External, External{Import: c.imp, Module: c.module})
				}
			})
			got := added(Check(doc, table, pkgs), Check(doc, table, g))
			row := "(line " + rowLine(t, root, c.pkg) + ", `" + c.pkg + "`)"
			if len(got) != 1 || !namesImport(got[0], c.pkg, c.imp) || !strings.Contains(got[0], row) {
				t.Errorf("with %s importing %s the check added %q, want one message naming the package, the import and the row %s", c.pkg, c.imp, got, row)
			}
		})
	}
}

// TestUnusedEdgesFail: an edge a row allows but no code uses fails the
// check, for the module's packages and outside modules alike.
func TestUnusedEdgesFail(t *testing.T) {
	root, table, pkgs := repo(t)
	for _, c := range []struct{ pkg, drop string }{
		{"billing/report", "ledger"},
		{"ledger/filestore", "modernc.org/sqlite"},
	} {
		t.Run(c.pkg, func(t *testing.T) {
			g := withPackage(t, pkgs, c.pkg, func(p *Package) {
				p.Imports = slices.DeleteFunc(p.Imports, func(s string) bool { return s == c.drop })
				p.External = slices.DeleteFunc(p.External, func(e External) bool { return e.Module == c.drop })
			})
			got := added(Check(doc, table, pkgs), Check(doc, table, g))
			want := "row in docs/ARCHITECTURE.md (line " + rowLine(t, root, c.pkg) + ", `" + c.pkg + "`) allows `" + c.drop + "`, which none of its packages imports: remove it from the \"may import\" cell"
			if len(got) != 1 || got[0] != want {
				t.Errorf("without %s's import of %s the check added %q, want %q", c.pkg, c.drop, got, want)
			}
		})
	}
}

// TestPictureFollowsTheImports: the layer picture at the top of
// docs/ARCHITECTURE.md agrees with the import graph, and an import
// against it fails: one going up, one crossing between the columns, one
// to a package the picture does not draw.
func TestPictureFollowsTheImports(t *testing.T) {
	root, table, pkgs := repo(t)
	drawn := picture(t, root, pkgs)
	for _, p := range []string{"cmd/gpuledger", "web", "collector", "ledger", "attribution", "gpu"} {
		if _, ok := drawn[p]; !ok {
			t.Errorf("the picture does not draw %s", p)
		}
	}
	for _, msg := range CheckPicture(doc, table, drawn, pkgs) {
		t.Error(msg)
	}
	for _, c := range []struct{ pkg, imp, want string }{
		{"ledger", "billing/report", "not below it"},
		{"collector", "ledger", "the columns never import each other"},
		{"billing/report", "internal/focusvalidate", "which the picture does not draw"},
	} {
		g := withPackage(t, pkgs, c.pkg, func(p *Package) { p.Imports = append(p.Imports, c.imp) })
		got := added(CheckPicture(doc, table, drawn, pkgs), CheckPicture(doc, table, drawn, g))
		if len(got) != 1 || !strings.HasPrefix(got[0], "package "+c.pkg+", drawn ") || !strings.Contains(got[0], "imports "+c.imp+",") || !strings.Contains(got[0], c.want) {
			t.Errorf("with %s importing %s the picture check added %q, want one message with %q", c.pkg, c.imp, got, c.want)
		}
	}
}

// TestParsePicture: packages are found with their line and column.
func TestParsePicture(t *testing.T) {
	known := map[string]bool{"top": true, "a": true, "b": true, "a/x": true, "base": true}
	drawn, err := ParsePicture(strings.NewReader(`# doc
`+PictureHeading+`

text, a b not in the block

`+"```"+`
        top           words that name no package
    +----+-----+
    a        b
    a/x
    +----+-----+
        base
`+"```"+`
`), known)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Drawn{"top": {7, 0}, "a": {9, 'L'}, "b": {9, 'R'}, "a/x": {10, 'L'}, "base": {12, 0}}
	if len(drawn) != len(want) {
		t.Errorf("drawn %v, want %v", drawn, want)
	}
	for p, d := range want {
		if drawn[p] != d {
			t.Errorf("%s drawn %+v, want %+v", p, drawn[p], d)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"# no picture\n", "no fenced block"},
		{PictureHeading + "\n```\na\n", "never closes"},
		{PictureHeading + "\n```\na\na\n```\n", "drawn twice"},
		{PictureHeading + "\n```\n+---+\na\n```\n", "middle +"},
		{PictureHeading + "\n```\n+--+--+\na\n```\n", "never closes them"},
	} {
		if _, err := ParsePicture(strings.NewReader(c.text), known); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePicture(%q) = %v, want an error with %q", c.text, err, c.want)
		}
	}
}

// TestCheckMessages: each kind of failure, on a small table, says what to
// add or change.
func TestCheckMessages(t *testing.T) {
	long := strings.Repeat("x", MaxJob+1)
	table, err := ParseTable(strings.NewReader(`# x

| package | job | may import |
|---|---|---|
| ` + "`attribution`" + ` | maths | ` + "`gpu`, `k8s.io/api`" + ` |
| ` + "`gpu`, `workload`" + ` | leaves | stdlib only |
| ` + "`cmd/x`" + ` | wiring | ` + "`*`" + ` |
| ` + "`gone`" + ` | ` + long + ` | stdlib only |

after the table
| not | a | row |
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != 5 || len(table["attribution"].Allow) != 2 || len(table["gpu"].Allow) != 0 || table["workload"] != table["gpu"] || !table["cmd/x"].Any {
		t.Fatalf("table %+v", table)
	}
	got := Check(doc, table, []Package{
		{Path: "attribution", Imports: []string{"gpu", "sim"}},
		{Path: "gpu", External: []External{{"gopkg.in/yaml.v3", "gopkg.in/yaml.v3"}}},
		{Path: "workload"},
		{Path: "cmd/x", Imports: []string{"attribution", "sim"}, External: []External{{"k8s.io/api/core/v1", "k8s.io/api"}}},
		{Path: "billing/outbox", Imports: []string{"billing/ledger", "attribution"}, External: []External{{"k8s.io/api/core/v1", "k8s.io/api"}, {"k8s.io/api/apps/v1", "k8s.io/api"}}},
		{Path: "support/backoff"},
	})
	want := []string{
		"package attribution imports sim, which its row in docs/ARCHITECTURE.md (line 5, `attribution`) does not allow: add `sim` to that row's \"may import\" cell, or drop the import",
		"package billing/outbox has no row in docs/ARCHITECTURE.md: add the row | `billing/outbox` | <its job> | `attribution`, `billing/ledger`, `k8s.io/api` |",
		"package gpu imports gopkg.in/yaml.v3 of outside module gopkg.in/yaml.v3, which its row in docs/ARCHITECTURE.md (line 6, `gpu`, `workload`) does not allow: add `gopkg.in/yaml.v3` to that row's \"may import\" cell, or drop the import",
		"package support/backoff has no row in docs/ARCHITECTURE.md: add the row | `support/backoff` | <its job> | stdlib only |",
		"row in docs/ARCHITECTURE.md (line 5, `attribution`) allows `k8s.io/api`, which none of its packages imports: remove it from the \"may import\" cell",
		"row in docs/ARCHITECTURE.md (line 8, `gone`) has a job cell of 201 characters: keep it to one line of at most 200 and move the details into prose below the table",
		"row in docs/ARCHITECTURE.md (line 8, `gone`) names package gone, which does not exist: remove it from the row",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestParseTableRejects: a cell that is not exactly what the grammar at
// the top of docs/ARCHITECTURE.md allows is an error naming its line.
func TestParseTableRejects(t *testing.T) {
	const head = "| package | job | may import |\n|---|---|---|\n"
	for _, c := range []struct{ text, want string }{
		{"no table here", "no table"},
		{head + "| attribution | no backticks | stdlib only |\n", "line 3: first cell"},
		{head + "| `a` | x | stdlib only |\n| `a` | again | stdlib only |\n", "line 4: package a has a row already, at line 3"},
		{head + "| `a` | x | `gpu`; otherwise stdlib |\n", "line 3: may-import cell"},
		{head + "| `a` | x | `gpu`, client-go (rest) |\n", "line 3: may-import cell"},
		{head + "| `a` | x | stdlib |\n", "line 3: may-import cell"},
		{head + "| `a` | x | `gpu`, `gpu` |\n", "listed twice"},
		{head + "| `a` | x | `gpu`, `*` |\n", "`*` must stand alone"},
		{head + "| `a` | x |\n", "exactly three cells"},
		{head + "| `k8s.io/api` | x | stdlib only |\n", "not a module-relative package path"},
	} {
		_, err := ParseTable(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTable(%q) = %v, want an error with %q", c.text, err, c.want)
		}
	}
}

// TestLoad reads a small module in testdata: the standard library is left
// out, the module's own packages are module-relative, an outside package
// comes with its module's path, and test files' imports do not count.
func TestLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pkgs, err := Load(ctx, filepath.Join("testdata", "tree"))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Path, b.Path) })
	want := []Package{
		{Path: "."},
		{Path: "a", Imports: []string{"b"}, External: []External{{"example.org/ext/sub", "example.org/ext"}}},
		{Path: "b"},
	}
	want[0].Imports = []string{"a"}
	if len(pkgs) != len(want) {
		t.Fatalf("Load = %+v, want %+v", pkgs, want)
	}
	for i := range want {
		if pkgs[i].Path != want[i].Path || !slices.Equal(pkgs[i].Imports, want[i].Imports) || !slices.Equal(pkgs[i].External, want[i].External) {
			t.Errorf("Load[%d] = %+v, want %+v", i, pkgs[i], want[i])
		}
	}
	if _, err := Load(ctx, filepath.Join("testdata", "absent")); err == nil {
		t.Error("Load of a directory that does not exist: no error")
	}
}

// repo loads the module's real import graph and docs/ARCHITECTURE.md.
func repo(t *testing.T) (root string, table Table, pkgs []Package) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("cannot run go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a module")
	}
	root = filepath.Dir(gomod)
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err = ParseTable(f)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pkgs, err = Load(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return root, table, pkgs
}

// picture parses the layer picture of docs/ARCHITECTURE.md.
func picture(t *testing.T, root string, pkgs []Package) map[string]Drawn {
	t.Helper()
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.Path] = true
	}
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	drawn, err := ParsePicture(f, known)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return drawn
}

// withPackage returns a copy of pkgs with the package at path changed by
// edit.
func withPackage(t *testing.T, pkgs []Package, path string, edit func(*Package)) []Package {
	t.Helper()
	g := slices.Clone(pkgs)
	for i := range g {
		if g[i].Path == path {
			g[i].Imports = slices.Clone(g[i].Imports)
			g[i].External = slices.Clone(g[i].External)
			edit(&g[i])
			return g
		}
	}
	t.Fatalf("no package %s in the graph", path)
	return nil
}

// namesImport reports whether msg starts by naming pkg's import of imp
// (the whole path, not a prefix of a longer one).
func namesImport(msg, pkg, imp string) bool {
	rest, ok := strings.CutPrefix(msg, "package "+pkg+" imports "+imp)
	return ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ","))
}

// added returns the messages of after that before lacks.
func added(before, after []string) []string {
	var out []string
	for _, m := range after {
		if !slices.Contains(before, m) {
			out = append(out, m)
		}
	}
	return out
}

// rowLine finds, by reading the document itself, the line of the row
// whose first cell starts with pkg.
func rowLine(t *testing.T, root, pkg string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.HasPrefix(sc.Text(), "| `"+pkg+"`") {
			return strconv.Itoa(n)
		}
	}
	t.Fatalf("%s: no row starts with %s", doc, pkg)
	return ""
}
