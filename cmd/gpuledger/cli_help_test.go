package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runCLI runs args as main would and returns its exit status and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = exitCode(run(context.Background(), args, &out), &errOut)
	return code, out.String(), errOut.String()
}

// Every command answers -h, --help and `help CMD` alike: usage on stdout,
// exit 0, nothing else run.
func TestEveryCommandsHelpGoesToStdoutAndExitsZero(t *testing.T) {
	cmds := [][]string{{"ledger", "export"}, {"ledger", "migrate"}}
	for _, c := range commands() {
		cmds = append(cmds, []string{c.name})
	}
	for _, cmd := range cmds {
		name := strings.Join(cmd, " ")
		var first string
		for _, form := range [][]string{append(cmd[:len(cmd):len(cmd)], "-h"), append(cmd[:len(cmd):len(cmd)], "--help"), append([]string{"help"}, cmd...)} {
			code, stdout, stderr := runCLI(form...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: gpuledger "+cmd[0]) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want usage on stdout and exit 0", form, code, stdout, stderr)
			}
			if first == "" {
				first = stdout
			} else if stdout != first {
				t.Errorf("%s: %q prints other usage than -h", name, form)
			}
		}
	}
	for _, form := range [][]string{{"help"}, {"-h"}, {"--help"}, {"ledger", "help"}} {
		if code, stdout, _ := runCLI(form...); code != 0 || !strings.HasPrefix(stdout, "usage: gpuledger") {
			t.Errorf("%q: exit %d, stdout %q", form, code, stdout)
		}
	}
}

// Misuse exits 2 with the error and usage on stderr and nothing on stdout.
func TestUnknownCommandsAndFlagsExitTwoWithUsageOnStderr(t *testing.T) {
	forms := [][]string{{}, {"nope"}, {"help", "nope"}, {"ledger"}, {"ledger", "nope"}, {"version", "extra"},
		{"ledger", "export", "--nope"}, {"ledger", "migrate", "--nope"}}
	for _, c := range commands() {
		forms = append(forms, []string{c.name, "--no-such-flag"})
	}
	for _, form := range forms {
		code, stdout, stderr := runCLI(form...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "usage: gpuledger") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and usage on stderr", form, code, stdout, stderr)
		}
	}
}

func TestVersionFlagEqualsVersionCommand(t *testing.T) {
	_, want, _ := runCLI("version")
	if !strings.HasPrefix(want, "gpuledger "+version+" (") {
		t.Fatalf("version prints %q", want)
	}
	for _, form := range []string{"--version", "-version"} {
		if code, got, _ := runCLI(form); code != 0 || got != want {
			t.Errorf("%s: exit %d, %q; want %q", form, code, got, want)
		}
	}
}

// A failure that is not misuse exits 1 without usage.
func TestFailuresExitOne(t *testing.T) {
	code, _, stderr := runCLI("report", "--period", "2026-11")
	if code != 1 || strings.Contains(stderr, "usage:") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
