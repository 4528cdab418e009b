package scenario

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// traceHeader is the exact header a busy trace must start with.
const traceHeader = "from,to,fraction"

// tracePath resolves a busyTrace path against the scenario's directory.
func tracePath(dir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// readTrace loads a busy-trace CSV. Rows keep their line numbers so that
// later checks can point at them. Only regular files are read: a path naming
// a device or a pipe would otherwise block or never end.
func readTrace(path string) ([]lineSegment, error) {
	// Stat before opening: opening a FIFO for reading blocks until a writer
	// shows up.
	if err := requireRegular(os.Stat(path)); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open busy trace: %w", err)
	}
	defer f.Close()
	if err := requireRegular(f.Stat()); err != nil {
		return nil, err
	}
	return parseTrace(bufio.NewReader(f))
}

func requireRegular(st os.FileInfo, err error) error {
	if err != nil {
		return fmt.Errorf("cannot stat busy trace: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("busy trace is not a regular file (mode %s)", st.Mode())
	}
	return nil
}

// lineSegment is a trace row before it becomes a Segment.
type lineSegment struct {
	line           int
	from, to, frac float64
}

func parseTrace(r io.Reader) ([]lineSegment, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 3
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("empty file, want header %q", traceHeader)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read header: %w", err)
	}
	if got := strings.Join(header, ","); got != traceHeader {
		return nil, fmt.Errorf("header is %q, want %q", got, traceHeader)
	}
	var out []lineSegment
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read row: %w", err)
		}
		line, _ := cr.FieldPos(0)
		seg, err := parseTraceRow(rec, line)
		if err != nil {
			return nil, err
		}
		out = append(out, seg)
	}
}

func parseTraceRow(rec []string, line int) (lineSegment, error) {
	var v [3]float64
	for i, name := range []string{"from", "to", "fraction"} {
		f, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
		if err != nil {
			return lineSegment{}, fmt.Errorf("line %d: %s %q is not a number", line, name, rec[i])
		}
		v[i] = f
	}
	return lineSegment{line: line, from: v[0], to: v[1], frac: v[2]}, nil
}
