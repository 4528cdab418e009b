package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/internal/scorecard"
)

// simulateTimeout bounds one scenario's simulation, as the reference
// checker does.
const simulateTimeout = 600 * time.Second

// shownErrors is how many of a failed scenario's problems are printed.
const shownErrors = 8

// suite is one scoring run over a directory of scenarios.
type suite struct {
	bin, scenarios, out, filter string
	w                           io.Writer
}

// outcome is one scenario's verdict.
type outcome struct {
	name string
	wall time.Duration
	res  scorecard.Result
}

// run scores every scenario directory whose name contains the filter, in
// name order, and prints the summary. It reports whether all passed; an
// error means nothing could be scored.
func (s suite) run(ctx context.Context) (bool, error) {
	names, err := scenarioNames(s.scenarios, s.filter)
	if err != nil {
		return false, err
	}
	if len(names) == 0 {
		return false, fmt.Errorf("no scenario directories in %s matching %q", s.scenarios, s.filter)
	}
	passed, worst := 0, 0.0
	for _, name := range names {
		o := s.one(ctx, name)
		worst = math.Max(worst, o.res.WorstUsedErr)
		if o.res.OK() {
			passed++
		}
		s.print(o)
	}
	fmt.Fprintf(s.w, "scenarios: %d/%d pass; worst used error %.2f%%\n", passed, len(names), 100*worst)
	return passed == len(names), nil
}

func scenarioNames(dir, filter string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list scenarios: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.Contains(e.Name(), filter) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// one simulates and scores one scenario; every problem, including a
// simulation that fails, is in the result.
func (s suite) one(ctx context.Context, name string) outcome {
	o := outcome{name: name}
	dir := filepath.Join(s.scenarios, name)
	truth, err := scorecard.ReadTruth(filepath.Join(dir, "truth.json"))
	if err != nil {
		o.res.Errors = []string{err.Error()}
		return o
	}
	out := filepath.Join(s.out, name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		o.res.Errors = []string{fmt.Sprintf("cannot create %s: %v", out, err)}
		return o
	}
	start := time.Now()
	err = s.simulate(ctx, filepath.Join(dir, "scenario.yaml"), out)
	o.wall = time.Since(start)
	if err != nil {
		o.res.Errors = []string{err.Error()}
		return o
	}
	o.res = scorecard.Check(truth, out)
	return o
}

// simulate runs BIN simulate; a failure carries the end of its output.
func (s suite) simulate(ctx context.Context, scenarioPath, out string) error {
	ctx, cancel := context.WithTimeout(ctx, simulateTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.bin, "simulate", "--scenario", scenarioPath, "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("simulate timed out after %v", simulateTimeout)
	}
	if err != nil {
		tail := stderr.String()
		if tail == "" {
			tail = stdout.String()
		}
		return fmt.Errorf("simulate failed (%v): %s", err, lastBytes(strings.TrimSpace(tail), 300))
	}
	return nil
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func (s suite) print(o outcome) {
	stats := fmt.Sprintf("(wall %.2f s, worst used error %.2f%%)", o.wall.Seconds(), 100*o.res.WorstUsedErr)
	if o.res.OK() {
		fmt.Fprintf(s.w, "ok   %s %s\n", o.name, stats)
		return
	}
	fmt.Fprintf(s.w, "FAIL %s %s\n", o.name, stats)
	for i, e := range o.res.Errors {
		if i == shownErrors {
			fmt.Fprintf(s.w, "    ... and %d more\n", len(o.res.Errors)-shownErrors)
			break
		}
		fmt.Fprintf(s.w, "    %s\n", e)
	}
}
