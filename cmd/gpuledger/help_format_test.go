package main

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideMaterial matches what a user of the repository does not have:
// the project's private contracts and seeds, chapter codes and tracker
// issues. Help, docs and comments must stand alone.
var outsideMaterial = regexp.MustCompile(`shared/|\.\./shared|seeds?/|\bseed's\b|\bthe seed\b|\bCode 33\b|\b[Ii]ssues? \d+\b`)

// Every command's help has one shape, whether written by hand or generated
// from its flags: "usage: gpuledger CMD ...", a blank line, a paragraph
// saying what the command does, and every flag the command accepts on a
// line of its own as "  --name  meaning" (never Go's default "-name type"
// with tab-indented text); and none points at material outside the
// repository.
func TestEveryCommandsHelpHasOneShape(t *testing.T) {
	sets := map[string]*flag.FlagSet{}
	flagSetParsed = func(fs *flag.FlagSet) { sets[fs.Name()] = fs }
	t.Cleanup(func() { flagSetParsed = nil })
	cmds := [][]string{{"ledger", "export"}, {"ledger", "migrate"}, {"prices", "record"}, {"prices", "list"}}
	for _, c := range commands() {
		if c.name != "ledger" && c.name != "prices" {
			cmds = append(cmds, []string{c.name})
		}
	}
	goDefault := regexp.MustCompile(`(?m)^\s+-[A-Za-z][\w.-]*( [a-z]+)?$|\t`)
	for _, cmd := range cmds {
		name := strings.Join(cmd, " ")
		code, help, _ := runCLI(append(cmd[:len(cmd):len(cmd)], "-h")...)
		if code != 0 {
			t.Errorf("%s -h: exit %d", name, code)
			continue
		}
		lines := strings.Split(help, "\n")
		if !strings.HasPrefix(lines[0], "usage: gpuledger "+name) {
			t.Errorf("%s: first line %q", name, lines[0])
		}
		i := 1
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			if !strings.HasPrefix(lines[i], " ") && !strings.HasPrefix(lines[i], "usage:") {
				t.Errorf("%s: usage line %q is neither indented nor another usage", name, lines[i])
			}
			i++
		}
		if i+1 >= len(lines) || lines[i+1] == "" || strings.HasPrefix(lines[i+1], " ") {
			t.Errorf("%s: no paragraph after the usage lines:\n%s", name, help)
		}
		if m := goDefault.FindString(help); m != "" {
			t.Errorf("%s: help in Go's default flag format (%q):\n%s", name, m, help)
		}
		if m := outsideMaterial.FindString(help); m != "" {
			t.Errorf("%s: help refers to %q, outside the repository", name, m)
		}
		fs := sets[name]
		if fs == nil {
			t.Errorf("%s: no flag set parsed", name)
			continue
		}
		fs.VisitAll(func(f *flag.Flag) {
			documented := regexp.MustCompile(`(?m)^ +--[^ ]*--` + regexp.QuoteMeta(f.Name) + `\b|^ +--` + regexp.QuoteMeta(f.Name) + `(?:[ /=]|$)`)
			if !documented.MatchString(help) {
				t.Errorf("%s: flag --%s has no line of its own in the help", name, f.Name)
			}
		})
	}
	_, top, _ := runCLI("-h")
	if !regexp.MustCompile(`(?m)^  report .*FOCUS`).MatchString(top) {
		t.Errorf("top-level usage does not say report writes FOCUS:\n%s", top)
	}
}

// outsideAllowed are files that may name outside material: the CI script's
// optional cross-check against an external reference checker, which it
// runs only where that checker sits beside the checkout.
var outsideAllowed = map[string]bool{".ci/run": true, "cmd/gpuledger/help_format_test.go": true}

// No doc, comment, help or test in the repository points at material a
// user does not have (other projects' public issue trackers excepted:
// "HAMi issue 1741" is a citation anyone can follow).
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", "out", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 1<<20 || outsideAllowed[rel] {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			return err
		}
		text := string(b)
		for _, loc := range outsideMaterial.FindAllStringIndex(text, -1) {
			before := text[max(0, loc[0]-12):loc[0]]
			if strings.HasSuffix(before, "HAMi ") || strings.HasSuffix(before, "ClickHouse ") {
				continue
			}
			line := strings.Count(text[:loc[0]], "\n") + 1
			t.Errorf("%s:%d: %q points outside the repository", rel, line, text[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
