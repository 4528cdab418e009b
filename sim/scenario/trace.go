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

// traceHeader is the exact header a busy trace must start with;
// memoryTraceHeader a memory trace's.
const (
	traceHeader       = "from,to,fraction"
	memoryTraceHeader = "from,to,mib"
)

// tracePath resolves a trace path against the scenario's directory.
func tracePath(dir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// readTrace loads a busy-trace CSV.
func readTrace(path string) ([]lineSegment, error) {
	rows, err := readTraceRows(path, "busy trace", traceHeader)
	if err != nil {
		return nil, err
	}
	out := make([]lineSegment, len(rows))
	for i, r := range rows {
		out[i] = lineSegment{line: r.line, from: r.v[0], to: r.v[1], frac: r.v[2]}
	}
	return out, nil
}

// readTraceRows loads a three-column CSV of numbers whose first line is
// exactly header. Rows keep their line numbers so that later checks can
// point at them. Only regular files are read: a path naming a device or a
// pipe would otherwise block or never end.
func readTraceRows(path, what, header string) ([]traceRow, error) {
	// Stat before opening: opening a FIFO for reading blocks until a writer
	// shows up.
	if err := requireRegular(what)(os.Stat(path)); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err := requireRegular(what)(st, err); err != nil {
		return nil, err
	}
	if st.Size() > MaxTraceBytes {
		return nil, fmt.Errorf("%s is %d bytes, larger than %d (%d MiB)", what, st.Size(), MaxTraceBytes, MaxTraceBytes>>20)
	}
	// The limit holds for a file that grows while it is read, too.
	rows, err := parseTraceRows(bufio.NewReader(io.LimitReader(f, MaxTraceBytes+1)), header)
	if err == nil {
		if pos, serr := f.Seek(0, io.SeekCurrent); serr == nil && pos > MaxTraceBytes {
			return nil, fmt.Errorf("%s grew past %d bytes (%d MiB) while read", what, MaxTraceBytes, MaxTraceBytes>>20)
		}
	}
	return rows, err
}

// requireRegular returns a check taking Stat's results directly.
func requireRegular(what string) func(os.FileInfo, error) error {
	return func(st os.FileInfo, err error) error {
		if err != nil {
			return fmt.Errorf("cannot stat %s: %w", what, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file (mode %s)", what, st.Mode())
		}
		return nil
	}
}

// lineSegment is a busy-trace row before it becomes a Segment.
type lineSegment struct {
	line           int
	from, to, frac float64
}

// traceRow is one row of a trace: its line and its three numbers.
type traceRow struct {
	line int
	v    [3]float64
}

func parseTraceRows(r io.Reader, header string) ([]traceRow, error) {
	names := strings.Split(header, ",")
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(names)
	cr.ReuseRecord = true
	got, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("empty file, want header %q", header)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read header: %w", err)
	}
	if g := strings.Join(got, ","); g != header {
		return nil, fmt.Errorf("header is %q, want %q", shortText(g), header)
	}
	var out []traceRow
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read row: %w", err)
		}
		line, _ := cr.FieldPos(0)
		row, err := parseTraceRow(rec, names, line)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
}

func parseTraceRow(rec, names []string, line int) (traceRow, error) {
	row := traceRow{line: line}
	for i, name := range names {
		f, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
		if err != nil {
			return traceRow{}, fmt.Errorf("line %d: %s %q is not a number", line, name, shortText(rec[i]))
		}
		row.v[i] = f
	}
	return row, nil
}
