package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
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
// generates one from the flags.
func parseFlags(fs *flag.FlagSet, args []string, usage string) error {
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

// flagUsage is the generated usage of a command without a usage text.
func flagUsage(fs *flag.FlagSet) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "usage: gpuledger %s [flags]\n\nflags:\n", fs.Name())
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
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
