package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Every command's --out writes a regular file and nothing else: a device, a
// FIFO or a directory is refused with an error naming it and is left as it
// was; a symbolic link is followed (the file it names is written, the link
// stays); - is standard output. The device is a real one, made with mknod in
// a scratch directory (as root, a rename over the host's /dev/null would
// replace it).
func TestOutWritesOnlyRegularFiles(t *testing.T) {
	db, _ := simulatedLedger(t)
	prices := pricesFile(t, "allocation")
	commands := map[string][]string{
		"report":        {"report", "--period", "2026-11", "--prices", prices, "--ledger", db},
		"ledger export": {"ledger", "export", "--ledger", db, "--from", "2026-11-01", "--to", "2026-12-01"},
		"advise":        {"advise", "--period", "2026-11", "--ledger", db, "--prices", prices, "--format", "json"},
		"whatif":        {"whatif", "--tenants", "2", "--runs", "1", "--duration", "1s"},
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	targets := map[string]fs.FileMode{fifo: fs.ModeNamedPipe, dir: fs.ModeDir}
	what := map[string]string{fifo: "a FIFO", dir: "a directory"}
	if os.Geteuid() == 0 {
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatalf("mknod: %v", err)
		}
		targets[null] = fs.ModeDevice | fs.ModeCharDevice
		what[null] = "a character device"
	} else {
		t.Log("not root: the character device case needs mknod (CI runs as root)")
	}
	for name, args := range commands {
		for target, kind := range targets {
			err := run(context.Background(), append(args[:len(args):len(args)], "--out", target), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), what[target]) {
				t.Errorf("%s --out %s (%s): %v", name, target, what[target], err)
			}
			if fi, err := os.Lstat(target); err != nil || fi.Mode().Type() != kind {
				t.Errorf("%s --out %s: it is no longer %s", name, target, what[target])
			}
		}

		ext := map[string]string{"report": ".csv", "ledger export": ".csv", "advise": ".json", "whatif": ".txt"}[name]
		real := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+ext)
		if err := os.WriteFile(real, []byte("earlier"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link-"+filepath.Base(real))
		if err := os.Symlink(filepath.Base(real), link); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), append(args[:len(args):len(args)], "--out", link), &bytes.Buffer{}); err != nil {
			t.Errorf("%s --out LINK: %v", name, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s --out LINK replaced the link", name)
		}
		if b, _ := os.ReadFile(real); len(b) < 20 || string(b) == "earlier" {
			t.Errorf("%s --out LINK did not write the file it names: %q", name, b)
		}

		var stdout bytes.Buffer
		if err := run(context.Background(), append(args[:len(args):len(args)], "--out", "-"), &stdout); err != nil || stdout.Len() < 20 {
			t.Errorf("%s --out -: %v, %d bytes on standard output", name, err, stdout.Len())
		}
		if _, err := os.Stat("-"); err == nil {
			t.Errorf("%s --out - wrote a file named -", name)
		}
	}

	// simulate's --out is a directory: ledger.csv there must be a regular file.
	out := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(out, "ledger.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join("..", "..", "testdata", "examples", "mps-hostile-103", "scenario.yaml")
	err := run(context.Background(), []string{"simulate", "--scenario", scenario, "--out", out}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("simulate with ledger.csv a FIFO: %v", err)
	}
	if err := run(context.Background(), []string{"simulate", "--scenario", scenario, "--out", "-"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("simulate --out -: %v", err)
	}
}

// report --out x.pdf once wrote CSV into x.pdf. An extension that disagrees
// with the format is refused before anything is read; one that agrees, or
// none, is taken.
func TestReportOutExtensionMustFitTheFormat(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--out", "x.pdf"}, false},
		{[]string{"--out", "x.json", "--format", "csv"}, false},
		{[]string{"--out", "x.csv", "--format", "html"}, false},
		{[]string{"--out", "x.jsonl", "--format", "focus"}, false},
		{[]string{"--out", "x.csv"}, true},
		{[]string{"--out", "x.csv", "--format", "focus"}, true},
		{[]string{"--out", "x.HTML"}, true},
		{[]string{"--out", "x.jsonl"}, true},
		{[]string{"--out", "bill", "--format", "json"}, true},
		{[]string{"--out", "-", "--format", "html"}, true},
	} {
		args := append([]string{"--period", "2026-11", "--prices", "p.yaml", "--ledger", "l.db"}, c.args...)
		_, err := parseReportFlags(args)
		if c.ok != (err == nil) {
			t.Errorf("report %v: %v", c.args, err)
		}
		if err != nil && !strings.Contains(err.Error(), c.args[1]) {
			t.Errorf("report %v: the error does not name the file: %v", c.args, err)
		}
	}
}
