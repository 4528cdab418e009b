// Package archtest checks the module's import graph against the package
// table of docs/ARCHITECTURE.md: every package has a row, imports only
// what its row's "may import" cell lists (the module's own packages and
// outside modules; the standard library is always allowed), and every
// edge a row lists is used, so the table can neither be broken nor drift;
// and the layer picture above the table draws every import going down.
// The check runs as a test (make arch, make lint, make test).
package archtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxJob bounds a row's job cell, in characters: one line; the details
// belong in prose below the table.
const MaxJob = 200

// Rule is one row of the table.
type Rule struct {
	Line     int             // of the row in the document
	Packages []string        // the first cell: module-relative paths
	JobLen   int             // characters in the job cell
	Any      bool            // the cell is `*`: anything, never unused
	Allow    map[string]bool // module-relative packages and outside module paths
}

// Name says which row it is in a message.
func (r *Rule) Name() string {
	return fmt.Sprintf("line %d, `%s`", r.Line, strings.Join(r.Packages, "`, `"))
}

// Table maps a module-relative package path to its row.
type Table map[string]*Rule

// ParseTable reads the table of a markdown document whose header is
// "| package | job | may import |". The first cell lists the row's
// packages in backticks, separated by commas; the last cell is exactly
// `*`, or "stdlib only", or backticked paths separated by commas: a path
// whose first element has no dot is one of this module's packages
// (module-relative), any other is an outside module's path. Anything else
// in the cell is an error, so the cell means exactly what it lists.
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
		if len(cells) != 3 {
			return nil, fmt.Errorf("line %d: a row of the package table needs exactly three cells (package, job, may import), not %d", n, len(cells))
		}
		pkgs, err := pathList(cells[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: first cell: %w", n, err)
		}
		for _, p := range pkgs {
			if isOutside(p) || p == "*" {
				return nil, fmt.Errorf("line %d: first cell: %q is not a module-relative package path", n, p)
			}
		}
		rule := &Rule{Line: n, Packages: pkgs, JobLen: utf8.RuneCountInString(strings.TrimSpace(cells[1])), Allow: map[string]bool{}}
		switch last := strings.TrimSpace(cells[2]); last {
		case "`*`":
			rule.Any = true
		case "stdlib only":
		default:
			allow, err := pathList(last)
			if err != nil {
				return nil, fmt.Errorf("line %d: may-import cell (want `*`, stdlib only, or backticked paths separated by commas): %w", n, err)
			}
			for _, a := range allow {
				if a == "*" {
					return nil, fmt.Errorf("line %d: may-import cell: `*` must stand alone", n)
				}
				rule.Allow[a] = true
			}
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
		return nil, errors.New("no table headed | package | job | may import |")
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

// pathList parses "`a`, `b`": backticked paths (or `*`) separated by
// commas, nothing else, no path twice.
func pathList(cell string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(cell, ",") {
		item = strings.TrimSpace(item)
		word, ok := strings.CutPrefix(item, "`")
		if ok {
			word, ok = strings.CutSuffix(word, "`")
		}
		if !ok || !(word == "*" || isPath(word)) {
			return nil, fmt.Errorf("%q is not a path in backticks", item)
		}
		if slices.Contains(out, word) {
			return nil, fmt.Errorf("`%s` is listed twice", word)
		}
		out = append(out, word)
	}
	return out, nil
}

func isPath(w string) bool {
	if w == "" || strings.HasPrefix(w, "/") || strings.HasSuffix(w, "/") || strings.Contains(w, "//") {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '.' || c == '~') {
			return false
		}
	}
	return true
}

// isOutside reports whether a path in the table names an outside module
// (its first element has a dot, as every module path's does) rather than
// one of this module's packages.
func isOutside(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return first != "." && strings.Contains(first, ".")
}

// Package is one package of the module and its non-test imports.
type Package struct {
	Path     string     // module-relative
	Imports  []string   // module-relative: the module's own packages
	External []External // packages of outside modules
}

// External is an import of an outside module's package.
type External struct {
	Import string // the package's import path
	Module string // its module's path, what the table lists
}

// Check returns, sorted, one message per package without a row, per
// import its row does not allow, per allowed edge no package of the row
// uses, per row naming a package that does not exist and per job cell
// over MaxJob; each message names the package, the import and the row
// (line of doc) and says what to change.
func Check(doc string, t Table, pkgs []Package) []string {
	var out []string
	used := map[*Rule]map[string]bool{}
	have := map[string]bool{}
	for _, p := range pkgs {
		have[p.Path] = true
		r := t[p.Path]
		if r == nil {
			out = append(out, fmt.Sprintf("package %s has no row in %s: add the row | `%s` | <its job> | %s |", p.Path, doc, p.Path, wantCell(p)))
			continue
		}
		if used[r] == nil {
			used[r] = map[string]bool{}
		}
		for _, imp := range p.Imports {
			used[r][imp] = true
			if !r.Any && !r.Allow[imp] {
				out = append(out, fmt.Sprintf("package %s imports %s, which its row in %s (%s) does not allow: add `%s` to that row's \"may import\" cell, or drop the import",
					p.Path, imp, doc, r.Name(), imp))
			}
		}
		for _, e := range p.External {
			used[r][e.Module] = true
			if !r.Any && !r.Allow[e.Module] {
				out = append(out, fmt.Sprintf("package %s imports %s of outside module %s, which its row in %s (%s) does not allow: add `%s` to that row's \"may import\" cell, or drop the import",
					p.Path, e.Import, e.Module, doc, r.Name(), e.Module))
			}
		}
	}
	rows := map[*Rule]bool{}
	for p, r := range t {
		rows[r] = true
		if !have[p] {
			out = append(out, fmt.Sprintf("row in %s (%s) names package %s, which does not exist: remove it from the row", doc, r.Name(), p))
		}
	}
	for r := range rows {
		if r.JobLen > MaxJob {
			out = append(out, fmt.Sprintf("row in %s (%s) has a job cell of %d characters: keep it to one line of at most %d and move the details into prose below the table", doc, r.Name(), r.JobLen, MaxJob))
		}
		if r.Any {
			continue
		}
		for a := range r.Allow {
			if !used[r][a] {
				out = append(out, fmt.Sprintf("row in %s (%s) allows `%s`, which none of its packages imports: remove it from the \"may import\" cell", doc, r.Name(), a))
			}
		}
	}
	slices.Sort(out)
	return out
}

// wantCell is the may-import cell that allows exactly what p imports.
func wantCell(p Package) string {
	var all []string
	all = append(all, p.Imports...)
	for _, e := range p.External {
		if !slices.Contains(all, e.Module) {
			all = append(all, e.Module)
		}
	}
	if len(all) == 0 {
		return "stdlib only"
	}
	slices.Sort(all)
	return "`" + strings.Join(all, "`, `") + "`"
}

// Load lists the packages of the module in dir (go list ./...) with their
// non-test imports for linux/amd64 with cgo: the module's own
// packages module-relative, outside packages with their module's path,
// the standard library left out.
func Load(ctx context.Context, dir string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=ImportPath,Standard,Module,Imports,DepOnly", "./...")
	cmd.Dir = dir
	// One build context wherever the check runs: the one the collector is
	// built for (a DaemonSet on Linux), cgo files included.
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("cannot run go list in %s: %w\n%s", dir, err, stderr.String())
	}
	type module struct {
		Path string
		Main bool
	}
	type listed struct {
		ImportPath string
		Standard   bool
		DepOnly    bool
		Module     *module
		Imports    []string
	}
	all := map[string]*listed{}
	var mine []*listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("cannot decode go list output: %w", err)
		}
		all[l.ImportPath] = &l
		if !l.DepOnly {
			if l.Module == nil || !l.Module.Main {
				return nil, fmt.Errorf("go list names %s outside the main module", l.ImportPath)
			}
			mine = append(mine, &l)
		}
	}
	var pkgs []Package
	for _, l := range mine {
		p := Package{Path: relative(l.Module.Path, l.ImportPath)}
		for _, imp := range l.Imports {
			d := all[imp]
			switch {
			case imp == "C" || d != nil && d.Standard:
			case d == nil || d.Module == nil:
				return nil, fmt.Errorf("go list gives no module for %s, imported by %s", imp, l.ImportPath)
			case d.Module.Main:
				p.Imports = append(p.Imports, relative(d.Module.Path, imp))
			default:
				p.External = append(p.External, External{Import: imp, Module: d.Module.Path})
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func relative(module, path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// PictureHeading is the heading under which the first fenced block is the
// layer picture.
const PictureHeading = "### The layers"

// Drawn is where the layer picture draws a package.
type Drawn struct {
	Line int  // in the document
	Side byte // 'L' or 'R' between the column separators, 0 in the shared bands
}

// ParsePicture reads the layer picture: the first fenced block after
// PictureHeading. A word of the block that is one of known is a package
// drawn on that line. The two lines starting with "+-" bound the columns;
// between them a package left of the first one's middle "+" is in the
// left column, one right of it in the right column.
func ParsePicture(r io.Reader, known map[string]bool) (map[string]Drawn, error) {
	drawn := map[string]Drawn{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n, state, split, seps := 0, 0, -1, 0 // state: 0 before the heading, 1 before the block, 2 in it
	for sc.Scan() {
		n++
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case state == 0:
			if strings.TrimSpace(line) == PictureHeading {
				state = 1
			}
			continue
		case state == 1:
			if fence {
				state = 2
			}
			continue
		case fence:
			if seps == 1 {
				return nil, fmt.Errorf("line %d: the picture opens its columns with a +- line and never closes them", n)
			}
			return drawn, nil
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "+-") {
			seps++
			if seps == 1 {
				first := strings.Index(line, "+")
				mid := strings.Index(line[first+1:], "+")
				if mid < 0 || first+1+mid == strings.LastIndex(line, "+") {
					return nil, fmt.Errorf("line %d: the columns' +- line needs a middle +, where the columns split", n)
				}
				split = first + 1 + mid
			}
			continue
		}
		for _, loc := range word.FindAllStringIndex(line, -1) {
			w := line[loc[0]:loc[1]]
			if !known[w] {
				continue
			}
			if prev, dup := drawn[w]; dup {
				return nil, fmt.Errorf("line %d: package %s is drawn twice (first at line %d)", n, w, prev.Line)
			}
			d := Drawn{Line: n}
			if seps == 1 {
				d.Side = 'L'
				if loc[0] > split {
					d.Side = 'R'
				}
			}
			drawn[w] = d
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the layer picture: %w", err)
	}
	if state < 2 {
		return nil, fmt.Errorf("no fenced block after the heading %q", PictureHeading)
	}
	return nil, errors.New("the layer picture's fenced block never closes")
}

var word = regexp.MustCompile(`[a-z0-9_./-]+`)

// CheckPicture returns, sorted, one message per import the layer picture
// contradicts: a drawn package imports only packages drawn on lower lines,
// in its own column or the shared bands. The imports of wiring (a
// package whose row is `*`) are not drawn.
func CheckPicture(doc string, t Table, drawn map[string]Drawn, pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := drawn[p.Path]
		if !ok || t[p.Path] != nil && t[p.Path].Any {
			continue
		}
		for _, imp := range p.Imports {
			to, ok := drawn[imp]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("package %s, drawn at line %d of %s's layer picture, imports %s, which the picture does not draw: draw it below %s", p.Path, from.Line, doc, imp, p.Path))
			case to.Line <= from.Line:
				out = append(out, fmt.Sprintf("package %s, drawn at line %d of %s's layer picture, imports %s, drawn at line %d, not below it: move one of them or drop the import", p.Path, from.Line, doc, imp, to.Line))
			case from.Side != 0 && to.Side != 0 && from.Side != to.Side:
				out = append(out, fmt.Sprintf("package %s, drawn in the %s column of %s's layer picture (line %d), imports %s, drawn in the other column (line %d): the columns never import each other; move it to the shared bands or drop the import", p.Path, side(from.Side), doc, from.Line, imp, to.Line))
			}
		}
	}
	slices.Sort(out)
	return out
}

func side(s byte) string {
	if s == 'L' {
		return "left"
	}
	return "right"
}
