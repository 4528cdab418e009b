package main

import (
	"bytes"
	"context"
	"encoding/csv"
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
// shipped price book. It returns the demo's terminal output.
func demoRoot(t *testing.T) string {
	t.Helper()
	prices, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prices.yaml"))
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
	t.Chdir(root)
	fixed := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })
	var out bytes.Buffer
	if err := run(context.Background(), []string{"demo", "--out", "out/demo", "--days", "2", "--listen", ""}, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// readmeCommands are the README's `gpuledger ...` lines in code blocks,
// comments cut, except those that need a ClickHouse server.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	inBlock := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock || !strings.HasPrefix(line, "gpuledger ") || strings.Contains(line, "clickhouse://") {
			continue
		}
		line, _, _ = strings.Cut(line, " #")
		if strings.ContainsAny(line, `'"$`) {
			t.Fatalf("README line %q needs a shell; keep the examples plain", line)
		}
		cmds = append(cmds, strings.Fields(line)[1:])
	}
	return cmds
}

// The README's demo, report and export lines run as written against what
// the demo writes, and the command the demo prints writes its finance CSV
// again byte for byte from the shipped price book.
func TestReadmeCommandsRunOnTheDemoOutput(t *testing.T) {
	cmds := readmeCommands(t)
	demoOut := demoRoot(t)
	ran := map[string]int{}
	for _, args := range cmds {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Errorf("README: gpuledger %s: %v", strings.Join(args, " "), err)
			continue
		}
		if strings.Count(out.String(), "\n") < 2 && !strings.Contains(strings.Join(args, " "), "--out") {
			t.Errorf("README: gpuledger %s printed only %q", strings.Join(args, " "), out.String())
		}
		ran[args[0]]++
	}
	if ran["report"] == 0 || ran["ledger"] == 0 {
		t.Errorf("README has no runnable report or ledger export line: ran %v", ran)
	}

	m := regexp.MustCompile(`(?m)^Reproduce the CSV: gpuledger (.*)$`).FindStringSubmatch(demoOut)
	if m == nil {
		t.Fatalf("the demo prints no command that reproduces its CSV:\n%s", demoOut)
	}
	args := append(strings.Fields(m[1]), "--out", "again.csv")
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
		t.Errorf("gpuledger %s wrote other bytes than the demo's chargeback.csv (%d vs %d bytes)", m[1], len(got), len(want))
	}
	checkSummaryCosts(t, demoOut, want)
}

// checkSummaryCosts: the demo's terminal summary names what its columns
// count and shows each team's cost as the finance CSV adds it up.
func checkSummaryCosts(t *testing.T, demoOut string, financeCSV []byte) {
	t.Helper()
	for _, want := range []string{"held GPU-h", "used GPU-h", "held-but-unused episodes", "noisy-neighbour episodes", "starved episodes", "cost USD",
		"episodes: detector findings", "never allocated", "idle device time"} {
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
