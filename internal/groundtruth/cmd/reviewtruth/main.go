// Command reviewtruth writes what internal/groundtruth computes for each
// review scenario (testdata/review/<name>/scenario.yaml) next to the
// reviewer's hand truth, as truth.internal.json, so the two readings can
// be compared line by line. A scenario the parser rejects gets none (any
// stale one is removed). Run from the repository root:
//
//	go run ./internal/groundtruth/cmd/reviewtruth
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gpuledger/gpuledger/internal/groundtruth"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// InternalFile is the name of the file written beside each truth.json.
const InternalFile = "truth.internal.json"

func main() {
	dir := flag.String("dir", filepath.Join("testdata", "review"), "directory of review scenarios, one per subdirectory")
	flag.Parse()
	if err := writeAll(*dir); err != nil {
		slog.Error("reviewtruth failed", "err", err)
		os.Exit(1)
	}
}

// writeAll writes truth.internal.json for every scenario under dir.
func writeAll(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "scenario.yaml"))
	if err != nil {
		return fmt.Errorf("cannot list %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("no */scenario.yaml under %s", dir)
	}
	for _, p := range paths {
		out := filepath.Join(filepath.Dir(p), InternalFile)
		data, err := Render(p)
		var rejected *rejectedError
		if errors.As(err, &rejected) {
			slog.Info("scenario rejected by the parser: no internal truth", "scenario", p, "err", rejected.err)
			if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cannot remove stale %s: %w", out, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", out, err)
		}
	}
	return nil
}

// rejectedError is a scenario the parser refuses (a review scenario may
// test exactly that).
type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }

// Render computes the internal truth of one scenario file as JSON.
func Render(path string) ([]byte, error) {
	sc, err := scenario.Load(path)
	if err != nil {
		return nil, &rejectedError{err}
	}
	tr, err := groundtruth.Compute(sc)
	if err != nil {
		return nil, fmt.Errorf("cannot compute the truth of %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		return nil, fmt.Errorf("cannot write the truth of %s: %w", path, err)
	}
	return buf.Bytes(), nil
}
