// Package archtest checks the module's import graph against the package
// table of docs/ARCHITECTURE.md: every package has a row, and imports
// from this module only the packages its row's last column names in
// backticks. The check runs as a test (make lint, make test).
package archtest

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Rule is one package's row: the module-internal packages it may import.
type Rule struct {
	Line   int             // of the row in the document
	Any    bool            // "*": every package
	Allow  map[string]bool // module-relative paths
	StdLib bool            // the cell says "stdlib only" or "standard library only": no other module
}

// Table maps a module-relative package path to its row.
type Table map[string]*Rule

// ParseTable reads the table of a markdown document whose header is
// "| package | job | may import |": the first cell lists the row's
// packages in backticks, the last cell what they may import (backticked
// paths; `*` for any; prose around them is not read).
func ParseTable(r io.Reader) (Table, error) {
	t := Table{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	in, n := false, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if !in {
			in = isHeader(line)
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break // the table ended
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if isRule(cells) {
			continue
		}
		if len(cells) < 3 {
			return nil, fmt.Errorf("line %d: a row of the package table needs package, job and may-import cells", n)
		}
		pkgs := backticked(cells[0])
		if len(pkgs) == 0 {
			return nil, fmt.Errorf("line %d: no package in backticks in the first cell %q", n, strings.TrimSpace(cells[0]))
		}
		last := strings.ToLower(cells[len(cells)-1])
		rule := &Rule{Line: n, Allow: map[string]bool{},
			StdLib: strings.Contains(last, "stdlib only") || strings.Contains(last, "standard library only")}
		for _, a := range backticked(cells[len(cells)-1]) {
			if a == "*" {
				rule.Any = true
				continue
			}
			rule.Allow[a] = true
		}
		for _, p := range pkgs {
			if prev, dup := t[p]; dup {
				return nil, fmt.Errorf("line %d: package %s has a row already, at line %d", n, p, prev.Line)
			}
			t[p] = rule
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the package table: %w", err)
	}
	if !in {
		return nil, fmt.Errorf("no table headed | package | job | may import |")
	}
	return t, nil
}

func isHeader(line string) bool {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if len(cells) < 3 {
		return false
	}
	return strings.TrimSpace(cells[0]) == "package" && strings.TrimSpace(cells[len(cells)-1]) == "may import"
}

// isRule reports whether cells are the |---|---| line under the header.
func isRule(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(strings.TrimSpace(c), "-:") != "" {
			return false
		}
	}
	return true
}

// backticked returns the `quoted` words of s that look like package paths
// (or "*").
func backticked(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "`")
		if !ok {
			return out
		}
		word, after, ok := strings.Cut(rest, "`")
		if !ok {
			return out
		}
		if word == "*" || isPath(word) {
			out = append(out, word)
		}
		s = after
	}
}

func isPath(w string) bool {
	if w == "" {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Package is one package of the module and its non-test imports, as
// module-relative paths for the module's own packages.
type Package struct {
	Path     string   // module-relative
	Imports  []string // module-relative, only the module's own packages
	External []string // imports of other modules (not the standard library)
}

// Check returns one message per package without a row and per forbidden
// import, sorted, each saying what to add to the table at doc.
func Check(doc string, t Table, pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		r := t[p.Path]
		if r == nil {
			want := "stdlib only"
			if len(p.Imports) > 0 {
				want = "`" + strings.Join(p.Imports, "`, `") + "`"
			}
			out = append(out, fmt.Sprintf("package %s has no row in %s: add the row | `%s` | <its job> | %s |", p.Path, doc, p.Path, want))
			continue
		}
		if r.StdLib {
			for _, imp := range p.External {
				out = append(out, fmt.Sprintf("package %s imports %s, but its row in %s (line %d) says standard library only",
					p.Path, imp, doc, r.Line))
			}
		}
		if r.Any {
			continue
		}
		for _, imp := range p.Imports {
			if !r.Allow[imp] && imp != p.Path {
				out = append(out, fmt.Sprintf("package %s imports %s, which its row in %s (line %d) does not allow: add `%s` to that row's \"may import\" cell, or drop the import",
					p.Path, imp, doc, r.Line, imp))
			}
		}
	}
	slices.Sort(out)
	return out
}
