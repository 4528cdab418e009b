package scorecard

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// LedgerColumns are the columns ledger.csv must have (any order, extra
// columns allowed).
var LedgerColumns = []string{"interval_start", "interval_end", "node", "gpu_uuid", "gpu_model", "slice_id",
	"sharing_mode", "kind", "namespace", "pod", "pod_uid", "container", "team", "allocated_gpu_seconds",
	"used_gpu_seconds", "memory_mib_seconds", "energy_joules", "method"}

// Row is the part of one ledger.csv row the checks read.
type Row struct {
	IntervalStart, IntervalEnd string // kept as written: groups are keyed by the text
	GPU                        string
	Kind                       string
	Namespace, Pod, Container  string
	SharingMode, Team, Method  string
	Allocated, Used            float64
}

// errEmptyLedger is a ledger with a header and no rows.
var errEmptyLedger = errors.New("ledger.csv is empty")

// ReadLedger reads a ledger.csv file.
func ReadLedger(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open ledger: %w", err)
	}
	defer f.Close()
	return ParseLedger(f)
}

// ParseLedger reads ledger.csv text. An empty cell in a number column is
// zero; anything else that is not a finite number is an error naming the
// line and column.
func ParseLedger(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errEmptyLedger
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read ledger.csv header: %w", err)
	}
	col := columnIndex(header)
	if missing := missingColumns(col, LedgerColumns); len(missing) > 0 {
		return nil, fmt.Errorf("ledger.csv lacks columns %s", strings.Join(missing, ", "))
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read ledger.csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		row, err := ledgerRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("ledger.csv:%d: %w", line, err)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, errEmptyLedger
	}
	return rows, nil
}

func ledgerRow(rec []string, col map[string]int) (Row, error) {
	get := func(name string) string { return rec[col[name]] }
	alloc, err := seconds(get, "allocated_gpu_seconds")
	if err != nil {
		return Row{}, err
	}
	used, err := seconds(get, "used_gpu_seconds")
	if err != nil {
		return Row{}, err
	}
	return Row{
		IntervalStart: get("interval_start"), IntervalEnd: get("interval_end"),
		GPU: get("gpu_uuid"), Kind: get("kind"),
		Namespace: get("namespace"), Pod: get("pod"), Container: get("container"),
		SharingMode: get("sharing_mode"), Team: get("team"), Method: get("method"),
		Allocated: alloc, Used: used,
	}, nil
}

// seconds parses a number column; empty is zero, as the reference checker
// reads it.
func seconds(get func(string) string, name string) (float64, error) {
	s := get(name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: %q is not a finite number", name, s)
	}
	return v, nil
}

func columnIndex(header []string) map[string]int {
	col := make(map[string]int, len(header))
	for i, h := range header {
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	return col
}

func missingColumns(col map[string]int, want []string) []string {
	var missing []string
	for _, c := range want {
		if _, ok := col[c]; !ok {
			missing = append(missing, c)
		}
	}
	return missing
}
