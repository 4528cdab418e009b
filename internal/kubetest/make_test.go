package kubetest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The Kubernetes test binaries are built by `make kube-tools`, not by the
// tests. A make target that runs the tests of a package using this harness
// without depending on kube-tools passes wherever the tool cache already
// exists and fails on a new machine (CI's first run there), which is how
// `make race` once broke. This test reads the Makefile and the files it
// includes, finds every target whose recipe runs `go test` (directly or
// through bin/testsummary), and requires those that run such a package to
// depend on kube-tools, directly or through their prerequisites.

// makeRule is one target of the Makefile: its prerequisites and recipe.
type makeRule struct {
	prereqs []string
	recipe  []string
}

// readMakefile parses the top-level Makefile and its includes (plain
// `include FILE` lines) into rules. It understands the subset the project's
// Makefile uses: `target: prereqs`, tab-indented recipes, `\` continuations.
func readMakefile(t *testing.T, root string) map[string]*makeRule {
	t.Helper()
	rules := map[string]*makeRule{}
	var read func(path string)
	read = func(path string) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("cannot read %s: %v", path, err)
		}
		defer f.Close()
		var cur *makeRule
		var pending string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := pending + sc.Text()
			pending = ""
			if strings.HasSuffix(line, `\`) {
				pending = strings.TrimSuffix(line, `\`) + " "
				continue
			}
			switch {
			case strings.HasPrefix(line, "\t"):
				if cur != nil {
					cur.recipe = append(cur.recipe, strings.TrimSpace(line))
				}
			case strings.HasPrefix(line, "include "):
				for _, inc := range strings.Fields(line)[1:] {
					read(filepath.Join(root, inc))
				}
				cur = nil
			case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
				// Comments and blank lines end nothing: recipes may follow a comment.
			default:
				i := strings.Index(line, ":")
				if i <= 0 || strings.ContainsAny(line[:i], "=?+") || strings.HasPrefix(line[i:], ":=") {
					cur = nil // a variable assignment
					continue
				}
				cur = &makeRule{prereqs: strings.Fields(line[i+1:])}
				for _, name := range strings.Fields(line[:i]) {
					if name == ".PHONY" {
						cur = nil
						break
					}
					rules[name] = cur
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("cannot read %s: %v", path, err)
		}
	}
	read(filepath.Join(root, "Makefile"))
	return rules
}

// testedPatterns returns the package patterns a recipe line hands to go test
// (or to bin/testsummary, which runs go test): ./... for $(PKGS).
func testedPatterns(line string) []string {
	if !strings.Contains(line, "$(GO) test") && !strings.Contains(line, "bin/testsummary ") {
		return nil
	}
	var pats []string
	for _, f := range strings.Fields(line) {
		switch {
		case f == "$(PKGS)":
			pats = append(pats, "./...")
		case strings.HasPrefix(f, "./"):
			pats = append(pats, f)
		}
	}
	return pats
}

// covers says whether the go package pattern pat (relative, ./x/ or ./x/...)
// names the package at relative directory dir.
func covers(pat, dir string) bool {
	pat = strings.TrimPrefix(pat, "./")
	if rest, ok := strings.CutSuffix(pat, "..."); ok {
		rest = strings.TrimSuffix(rest, "/")
		return rest == "" || dir == rest || strings.HasPrefix(dir, rest+"/")
	}
	return strings.TrimSuffix(pat, "/") == dir
}

// dependsOn says whether target reaches want through its prerequisites.
func dependsOn(rules map[string]*makeRule, target, want string, seen map[string]bool) bool {
	if target == want {
		return true
	}
	if seen[target] {
		return false
	}
	seen[target] = true
	r := rules[target]
	if r == nil {
		return false
	}
	for _, p := range r.prereqs {
		if dependsOn(rules, p, want, seen) {
			return true
		}
	}
	return false
}

// harnessUsers lists, as directories relative to the module root, the
// packages whose tests import this harness (and the harness itself).
func harnessUsers(t *testing.T, root string) []string {
	t.Helper()
	const self = "github.com/gpuledger/gpuledger/internal/kubetest"
	cmd := exec.Command("go", "list", "-f", `{{.Dir}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var users []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dir, imports, _ := strings.Cut(line, "|")
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		for _, imp := range strings.Fields(imports) {
			if imp == self {
				users = append(users, rel)
				break
			}
		}
		if rel == "internal/kubetest" {
			users = append(users, rel)
		}
	}
	sort.Strings(users)
	return users
}

func TestMakeTargetsBuildKubeTools(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rules := readMakefile(t, root)
	if rules["kube-tools"] == nil || rules["test"] == nil {
		t.Fatalf("Makefile has no kube-tools or test target (parsed %d targets)", len(rules))
	}
	users := harnessUsers(t, root)
	if len(users) < 3 {
		t.Fatalf("found only %v using internal/kubetest: the go list query is wrong", users)
	}
	checked := 0
	for name, r := range rules {
		for _, line := range r.recipe {
			for _, pat := range testedPatterns(line) {
				for _, dir := range users {
					if !covers(pat, dir) {
						continue
					}
					checked++
					if !dependsOn(rules, name, "kube-tools", map[string]bool{}) {
						t.Errorf("make %s runs the tests of %s (pattern %s), which start a real kube-apiserver, but does not depend on kube-tools: on a new machine they find no binaries", name, dir, pat)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no make target runs a package that uses the harness: the Makefile parser is wrong")
	}
}

// The parser and the dependency walk above decide the test's verdict, so
// they are checked on a Makefile with the defect that broke CI.
func TestMakeCheckCatchesMissingPrerequisite(t *testing.T) {
	dir := t.TempDir()
	mk := "X := 1\n.PHONY: race\n\nrace:\n\t$(GO) test -race ./quota/kubequota/ \\\n\t  ./nodelabel/\nunit: kube-tools\n\tbin/testsummary -count=1 $(PKGS)\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := readMakefile(t, dir)
	if got := testedPatterns(rules["race"].recipe[0]); strings.Join(got, " ") != "./quota/kubequota/ ./nodelabel/" {
		t.Fatalf("race runs %v", got)
	}
	if dependsOn(rules, "race", "kube-tools", map[string]bool{}) {
		t.Error("race does not depend on kube-tools, yet the walk says it does")
	}
	if !dependsOn(rules, "unit", "kube-tools", map[string]bool{}) {
		t.Error("unit depends on kube-tools, yet the walk says it does not")
	}
	for _, c := range []struct {
		pat, dir string
		want     bool
	}{
		{"./...", "quota/kubequota", true},
		{"./quota/...", "quota/kubequota", true},
		{"./quota/", "quota/kubequota", false},
		{"./quota/kubequota/", "quota/kubequota", true},
		{"./e2e/kube/", "e2e", false},
	} {
		if got := covers(c.pat, c.dir); got != c.want {
			t.Errorf("covers(%q, %q) = %v, want %v", c.pat, c.dir, got, c.want)
		}
	}
}
