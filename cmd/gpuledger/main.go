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
		{"report", "chargeback for a period: finance CSV, JSON or HTML from the ledger and a price book", runReport},
		{"ledger", "ledger export (csv, jsonl) and migrate, on the embedded store or ClickHouse", runLedger},
		{"whatif", "simulate MIG, MPS and time-slicing latency for tenants on one GPU", runWhatif},
		{"advise", "sharing recommendations from the ledger: reclaim, right-size, consolidate, with savings", runAdvise},
		{"version", "print the version", func(_ context.Context, _ []string, w io.Writer) error {
			_, err := fmt.Fprintf(w, "gpuledger %s (%s)\n", version, revision)
			return err
		}},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})))
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "gpuledger:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return flag.ErrHelp
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(os.Stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gpuledger <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
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
