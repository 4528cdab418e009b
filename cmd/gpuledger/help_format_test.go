package main

import (
	"flag"
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
	cmds := [][]string{{"ledger", "export"}, {"ledger", "migrate"}}
	for _, c := range commands() {
		if c.name != "ledger" {
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
