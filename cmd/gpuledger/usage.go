package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The CLI's one convention for help and misuse, whatever the command:
// asking for help (-h, --help, help <command>) prints usage to stdout and
// exits 0; an unknown command, subcommand or flag prints the error and the
// usage to stderr and exits 2; any other failure exits 1.

// helpRequested carries a command's usage text up to run, which prints it
// to stdout: a flag set is parsed deep inside commands that have no stdout.
type helpRequested struct{ usage string }

func (h *helpRequested) Error() string { return "help requested" }

// usageError is a misuse of the command line; main prints it with usage.
type usageError struct {
	err   error
	usage string
}

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

// parseFlags parses args with fs and turns -h and flag errors into
// helpRequested and usageError. usage is the command's usage text; ""
// generates one from the flags and the command's commandHelp.
func parseFlags(fs *flag.FlagSet, args []string, usage string) error {
	if flagSetParsed != nil {
		flagSetParsed(fs)
	}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	if usage == "" {
		usage = flagUsage(fs)
	}
	if errors.Is(err, flag.ErrHelp) {
		return &helpRequested{usage: usage}
	}
	return &usageError{err: fmt.Errorf("%s: %w", fs.Name(), err), usage: usage}
}

// flagSetParsed, when set (by tests), sees every command's flag set
// before it parses: the help test checks each flag is documented.
var flagSetParsed func(*flag.FlagSet)

// commandHelp is the synopsis and description of the commands whose help
// is generated from their flags, so that every command's help has the one
// shape of the written ones: a usage line, a paragraph saying what the
// command does, then one "  --flag  meaning" line per flag.
var commandHelp = map[string]struct{ synopsis, about string }{
	"collect": {"[--node NAME] [--listen ADDR] [--ledger DSN] [flags]",
		"The DaemonSet collector: every --poll-interval it reads NVML, DCGM, the\n" +
			"kubelet's pod-resources socket, Kubernetes metadata and the host's /proc,\n" +
			"attributes every GPU-second to a container, idle device time, never\n" +
			"allocated capacity or unattributed use, commits ledger rows to the node's\n" +
			"embedded ledger (and ships them to --ledger), and serves /metrics and\n" +
			"/healthz on --listen. Needs a GPU node (docs/install.md)."},
	"simulate": {"--scenario FILE --out DIR [--listen ADDR --speed X] [flags]",
		"Runs the collector against a simulated node described by a scenario file\n" +
			"(docs/scenario-format.md) on a virtual clock, and writes DIR/ledger.csv and\n" +
			"DIR/flags.csv (docs/ledger-format.md)."},
	"demo": {"[--out DIR] [--days N] [--listen ADDR]",
		"Backfills --days of a built-in mixed fleet (four simulated nodes: MIG,\n" +
			"time-slicing, MPS and HAMi) into DIR/ledger.db, prints a per-team summary,\n" +
			"writes the chargeback priced by deploy/prices.yaml (DIR/chargeback.csv,\n" +
			"DIR/chargeback.html) and the simulated nodes' log (DIR/demo.log), then\n" +
			"serves the fleet's live /metrics and /healthz on --listen until Ctrl-C."},
	"ledger export": {"--from T --to T [--format csv|jsonl] [--ledger DSN] [--out FILE]",
		"Streams the ledger's rows whose interval starts in [--from, --to), as the\n" +
			"ledger CSV (docs/ledger-format.md) or JSON lines."},
	"ledger migrate": {"--ledger clickhouse://... [--clickhouse-cluster NAME] [--prices FILE]",
		"Creates or upgrades the ClickHouse ledger's schema: versioned and\n" +
			"idempotent, so running it again changes nothing."},
}

// flagUsage is the generated usage of a command without a usage text, in
// the written texts' shape.
func flagUsage(fs *flag.FlagSet) string {
	var b bytes.Buffer
	h := commandHelp[fs.Name()]
	if h.synopsis == "" {
		h.synopsis = "[flags]"
	}
	fmt.Fprintf(&b, "usage: gpuledger %s %s\n\n", fs.Name(), h.synopsis)
	if h.about != "" {
		fmt.Fprintf(&b, "%s\n\n", h.about)
	}
	width := 0
	fs.VisitAll(func(f *flag.Flag) { width = max(width, len(f.Name)+2) })
	fs.VisitAll(func(f *flag.Flag) {
		text := f.Usage
		if def := f.DefValue; def != "" && def != "0" && def != "0s" && def != "false" && !strings.Contains(text, "(default") {
			text += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(&b, "  %-*s  %s\n", width, "--"+f.Name, wrap(text, 76-width-4, strings.Repeat(" ", width+4)))
	})
	return b.String()
}

// wrap breaks text into lines of at most n characters, indenting the
// continuation lines.
func wrap(text string, n int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && line+1+len(w) > n {
			b.WriteString("\n" + indent)
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// exitCode prints err the way its kind asks and returns the exit status.
func exitCode(err error, stderr io.Writer) int {
	var u *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "gpuledger: %v\n\n%s", err, u.usage)
		return 2
	default:
		fmt.Fprintln(stderr, "gpuledger:", err)
		return 1
	}
}
