// Command gpuledger attributes every GPU-second of a Kubernetes GPU node to
// the containers that held and used it, under every sharing mode.
//
//	gpuledger collect    the DaemonSet collector (NVML, DCGM, kubelet, procfs)
//	gpuledger simulate   run the collector against a simulated node scenario
//	gpuledger demo       a built-in mixed-fleet simulation, then live metrics
//
// This package is wiring only; the work happens in collector/, attribution/
// and billing/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Set by the linker (-X main.version=...).
var (
	version  = "dev"
	revision = "unknown"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"collect", "run the node collector (DaemonSet entry point)", runCollect},
		{"simulate", "run the collector on a simulated node scenario", runSimulate},
		{"demo", "simulate a mixed GPU fleet, print a per-team summary, serve /metrics", runDemo},
		{"report", "chargeback for a period: finance CSV, JSON, HTML or FOCUS from the ledger and a price book", runReport},
		{"close", "close a month: store its bill in the ledger, priced as it is now, for good", runClose},
		{"reopen", "reopen a closed month, keeping its closing in the history", runReopen},
		{"adjust", "compare a closed month with it recomputed; --post bills the difference as adjustments", runAdjust},
		{"ledger", "ledger export (csv, jsonl) and migrate, on the embedded store or ClickHouse", runLedger},
		{"prices", "record price books in the ledger with the instant they take effect; list them", runPrices},
		{"whatif", "simulate MIG, MPS and time-slicing latency for tenants on one GPU", runWhatif},
		{"advise", "sharing recommendations from the ledger: reclaim, right-size, consolidate, with savings", runAdvise},
		{"serve", "the chargeback as a web app and an API: every month's report, files, advice and metrics", runServe},
		{"version", "print the version (also --version)", runVersion},
	}
}

// progName is how the user ran this binary, for the commands it prints
// for them to run: the path as typed where it was one (bin/gpuledger, so
// the printed line runs as written from the same directory), else the
// name, found on PATH.
var progName = invokedAs(os.Args[0])

func invokedAs(arg0 string) string {
	if strings.ContainsRune(arg0, '/') {
		return arg0
	}
	return "gpuledger"
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})))
	code := exitCode(run(ctx, os.Args[1:], os.Stdout), os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command args name; help, wherever it was asked for, is
// printed here to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	err := dispatch(ctx, args, stdout)
	var h *helpRequested
	if errors.As(err, &h) {
		_, err = io.WriteString(stdout, h.usage)
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{err: errors.New("no command given"), usage: usageText()}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return &helpRequested{usage: usageText()}
	case "help":
		if len(args) == 1 {
			return &helpRequested{usage: usageText()}
		}
		// help CMD [SUB] is CMD [SUB] --help.
		return dispatch(ctx, append(append([]string{}, args[1:]...), "--help"), stdout)
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	return &usageError{err: fmt.Errorf("unknown command %q", args[0]), usage: usageText()}
}

func usageText() string {
	var b strings.Builder
	b.WriteString("usage: gpuledger <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\n'gpuledger help <command>' or 'gpuledger <command> --help' describes a command.\n")
	return b.String()
}

func runVersion(_ context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(fs, args, "usage: gpuledger version\n\nPrints the version (git describe of the build) and revision.\n"); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{err: fmt.Errorf("version: unexpected argument %q", fs.Arg(0)), usage: "usage: gpuledger version\n"}
	}
	_, err := fmt.Fprintf(w, "gpuledger %s (%s)\n", version, revision)
	return err
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("GPULEDGER_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// envDefault returns the environment variable's value, or def when unset:
// every flag that names an external root or endpoint can come from the
// environment, as a DaemonSet sets it.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
