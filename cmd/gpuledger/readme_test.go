package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
)

// demoRoot runs a short demo (two days ending on 2026-11-24, no live
// server) in a fresh directory laid out like the repository, which becomes
// the working directory: out/demo holds what the demo wrote, deploy/ the
// shipped price book, testdata/ the repository's. It returns the demo's
// terminal output and what it logged outside its log file.
func demoRoot(t *testing.T) (stdout, logged string) {
	t.Helper()
	prices, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testdata, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "deploy", "prices.yaml"), prices, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testdata, filepath.Join(root, "testdata")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	fixed := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })
	// The program's name as the README's set-up leaves it.
	prevName := progName
	progName = "./bin/gpuledger"
	t.Cleanup(func() { progName = prevName })
	// Whatever the demo logs outside its own log file lands here.
	var log bytes.Buffer
	prevLog := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prevLog) })
	var out bytes.Buffer
	if err := run(context.Background(), []string{"demo", "--out", "out/demo", "--days", "2", "--listen", ""}, &out); err != nil {
		t.Fatal(err)
	}
	return out.String(), log.String()
}

// docFiles are the pages whose commands TestDocCommandsRunAsWritten runs:
// the README and every page under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join("..", "..", "README.md")}
	return append(files, docs...)
}

// docCommand is one gpuledger command line in a page's code block.
type docCommand struct {
	where string // file:line
	args  []string
}

// notRunHere says why a documented command cannot run in a test on a
// fresh clone, or "" when it can: these need a cluster or run until
// interrupted, and each is covered elsewhere (the ClickHouse, collector
// and live-server tests).
func notRunHere(args []string) string {
	line := strings.Join(args, " ")
	switch {
	case strings.Contains(line, "clickhouse://"):
		return "needs a ClickHouse server"
	case len(args) > 1 && args[0] == "ledger" && (args[1] == "backup" || args[1] == "restore"):
		return "backs up or restores a ClickHouse ledger (TestLedgerBackupRestoreRoundTrip runs them)"
	case args[0] == "collect":
		return "needs a GPU node, its driver and kubelet"
	case strings.Contains(line, "--prometheus"):
		return "needs a Prometheus server scraping inference servers"
	case strings.Contains(line, "--listen") && !strings.Contains(line, "--listen ''"):
		return "serves until interrupted"
	case args[0] == "close" || args[0] == "reopen" || args[0] == "adjust" || strings.Contains(line, "--recompute"):
		// The demo's ledger holds only the running month, which cannot
		// close; and a closing would change what every later example reads.
		return "closes, reopens or adjusts an ended month of the ledger for good (TestCloseCommands runs them)"
	}
	return ""
}

// docCommands are the gpuledger lines in the code blocks of files, comments
// cut, except those notRunHere. A line that calls a bare `gpuledger` is an
// error: after the README's set-up the binary is ./bin/gpuledger.
func docCommands(t *testing.T, files []string) []docCommand {
	t.Helper()
	var cmds []docCommand
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(filepath.ToSlash(f), "../../")
		inBlock := false
		for i, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
				continue
			}
			if !inBlock {
				continue
			}
			line, _, _ = strings.Cut(line, " #")
			where := fmt.Sprintf("%s:%d", rel, i+1)
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			switch fields[0] {
			case "gpuledger":
				if notRunHere(fields[1:]) == "" {
					t.Errorf("%s: %q calls a bare gpuledger: write ./bin/gpuledger, which the README's set-up builds", where, line)
				}
				continue
			case "./bin/gpuledger":
			default:
				continue
			}
			if notRunHere(fields[1:]) != "" {
				continue
			}
			if strings.ContainsAny(line, `'"$|<>`) {
				t.Errorf("%s: %q needs a shell; keep the examples plain", where, line)
				continue
			}
			cmds = append(cmds, docCommand{where, fields[1:]})
		}
	}
	return cmds
}

// Every gpuledger command in the README and the docs runs as written,
// from the repository's root, on what the demo writes; the command the
// demo prints writes its finance CSV again byte for byte; and the demo's
// diagnostics go to the log file it names, not to the terminal.
func TestReadmeCommandsRunOnTheDemoOutput(t *testing.T) {
	files := docFiles(t)
	cmds := docCommands(t, files)
	demoOut, logged := demoRoot(t)
	ran := map[string]int{}
	for _, c := range cmds {
		var out bytes.Buffer
		line := strings.Join(c.args, " ")
		if err := run(context.Background(), c.args, &out); err != nil {
			t.Errorf("%s: ./bin/gpuledger %s: %v", c.where, line, err)
			continue
		}
		if strings.Count(out.String(), "\n") < 2 && !strings.Contains(line, "--out") && c.args[0] != "version" {
			t.Errorf("%s: ./bin/gpuledger %s printed only %q", c.where, line, out.String())
		}
		ran[c.args[0]]++
	}
	for _, want := range []string{"report", "ledger", "simulate", "whatif", "advise"} {
		if ran[want] == 0 {
			t.Errorf("the README and docs have no runnable %s line: ran %v", want, ran)
		}
	}

	m := regexp.MustCompile(`(?m)^Reproduce the CSV: (\S+) (.*)$`).FindStringSubmatch(demoOut)
	if m == nil {
		t.Fatalf("the demo prints no command that reproduces its CSV:\n%s", demoOut)
	}
	if m[1] != progName {
		t.Errorf("the demo prints %q for the program; the user ran %q", m[1], progName)
	}
	args := append(strings.Fields(m[2]), "--out", "again.csv")
	if err := run(context.Background(), args, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("out", "demo", "chargeback.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("again.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || len(want) < 500 {
		t.Errorf("gpuledger %s wrote other bytes than the demo's chargeback.csv (%d vs %d bytes)", m[2], len(got), len(want))
	}
	checkSummaryCosts(t, demoOut, want)
	checkDemoLog(t, demoOut, logged)
}

// checkDemoLog: the simulated nodes' start-up lines are in the log file
// the demo names, and nowhere else.
func checkDemoLog(t *testing.T, demoOut, logged string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^Diagnostics:\s+(\S+)$`).FindStringSubmatch(demoOut)
	if m == nil {
		t.Fatalf("the demo names no log file:\n%s", demoOut)
	}
	log, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"NVML initialised", "GPU does not report utilisation samples"} {
		if !strings.Contains(string(log), line) {
			t.Errorf("%s lacks %q", m[1], line)
		}
		if strings.Contains(logged, line) || strings.Contains(demoOut, line) {
			t.Errorf("%q reached the terminal", line)
		}
	}
}

// checkSummaryCosts: the demo's terminal summary names what its columns
// count and shows each team's cost as the finance CSV adds it up.
func checkSummaryCosts(t *testing.T, demoOut string, financeCSV []byte) {
	t.Helper()
	for _, want := range []string{"held GPU-h", "used GPU-h", "held-but-unused episodes", "noisy-neighbour episodes", "starved episodes", "cost USD",
		"episodes: detector findings", "never allocated", "idle device time", "borrowed time"} {
		if !strings.Contains(demoOut, want) {
			t.Errorf("demo summary lacks %q", want)
		}
	}
	for _, bad := range report.AmbiguousTerms(demoOut) {
		t.Errorf("demo summary uses an ambiguous term: %q", bad)
	}
	recs, err := csv.NewReader(bytes.NewReader(financeCSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	perTeam := map[string]*big.Rat{}
	for _, r := range recs[1:] {
		if r[2] == "" {
			continue // platform and rounding lines
		}
		amount, ok := new(big.Rat).SetString(r[12])
		if !ok {
			t.Fatalf("amount %q", r[12])
		}
		if perTeam[r[2]] == nil {
			perTeam[r[2]] = new(big.Rat)
		}
		perTeam[r[2]].Add(perTeam[r[2]], amount)
	}
	if len(perTeam) < 3 {
		t.Fatalf("finance CSV has %d teams", len(perTeam))
	}
	for team, sum := range perTeam {
		row := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(team) + `\s.*\s(\S+)\s*$`).FindStringSubmatch(demoOut)
		if row == nil || row[1] != sum.FloatString(2) {
			t.Errorf("summary row of %s: %q, want cost %s", team, row, sum.FloatString(2))
		}
	}
}

// Every environment variable the binary reads is in the README.
func TestReadmeListsEveryEnvironmentVariable(t *testing.T) {
	readme := repoFile(t, "README.md")
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`(?:envDefault|Getenv|LookupEnv)\("([A-Z_]+)"`)
	seen := 0
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			seen++
			if !strings.Contains(readme, "`"+m[1]+"`") {
				t.Errorf("%s reads %s, which the README does not list", f, m[1])
			}
		}
	}
	if seen < 10 {
		t.Errorf("found only %d environment variables read", seen)
	}
}
