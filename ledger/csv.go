// Package ledger persists and exports ledger rows and findings
// (docs/ledger-format.md). This file holds the CSV forms,
// ledger.csv and flags.csv, written by `simulate` and `ledger export`.
package ledger

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// LedgerHeader is the header row of ledger.csv, in contract order.
var LedgerHeader = []string{
	"interval_start", "interval_end", "node", "gpu_uuid", "gpu_model", "slice_id",
	"sharing_mode", "kind", "namespace", "pod", "pod_uid", "container", "team",
	"allocated_gpu_seconds", "used_gpu_seconds", "memory_mib_seconds", "energy_joules", "method",
}

// FlagsHeader is the header row of flags.csv.
var FlagsHeader = []string{"start", "end", "kind", "node", "gpu_uuid", "namespace", "pod", "container", "detail"}

// CSVWriter writes ledger rows as RFC 4180 CSV with a header row.
type CSVWriter struct {
	w   *csv.Writer
	rec []string
}

// NewCSVWriter writes the ledger.csv header to w.
func NewCSVWriter(w io.Writer) (*CSVWriter, error) {
	cw := &CSVWriter{w: csv.NewWriter(w), rec: make([]string, len(LedgerHeader))}
	if err := cw.w.Write(LedgerHeader); err != nil {
		return nil, fmt.Errorf("cannot write ledger header: %w", err)
	}
	return cw, nil
}

// Write appends rows.
func (c *CSVWriter) Write(rows []attribution.Row) error {
	for i := range rows {
		r := &rows[i]
		c.rec = append(c.rec[:0],
			FormatTime(r.IntervalStart), FormatTime(r.IntervalEnd), GuardCell(r.Node), GuardCell(r.GPUUUID), GuardCell(r.GPUModel), GuardCell(r.SliceID),
			GuardCell(r.SharingMode), GuardCell(string(r.Kind)), GuardCell(r.Namespace), GuardCell(r.Pod), GuardCell(r.PodUID), GuardCell(r.Container), GuardCell(r.Team),
			FormatFloat(r.AllocatedGPUSeconds), FormatFloat(r.UsedGPUSeconds),
			FormatFloat(r.MemoryMiBSeconds), FormatFloat(r.EnergyJoules), GuardCell(r.Method))
		if err := c.w.Write(c.rec); err != nil {
			return fmt.Errorf("cannot write ledger row: %w", err)
		}
	}
	return nil
}

// Flush flushes buffered rows and reports any write error.
func (c *CSVWriter) Flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("cannot flush ledger csv: %w", err)
	}
	return nil
}

// FlagsWriter writes findings as flags.csv.
type FlagsWriter struct{ w *csv.Writer }

// NewFlagsWriter writes the flags.csv header to w.
func NewFlagsWriter(w io.Writer) (*FlagsWriter, error) {
	fw := &FlagsWriter{w: csv.NewWriter(w)}
	if err := fw.w.Write(FlagsHeader); err != nil {
		return nil, fmt.Errorf("cannot write flags header: %w", err)
	}
	return fw, nil
}

// Write appends findings.
func (f *FlagsWriter) Write(fs []attribution.Finding) error {
	for _, x := range fs {
		rec := []string{FormatTime(x.Start), FormatTime(x.End), GuardCell(x.Kind), GuardCell(x.Node), GuardCell(x.GPUUUID),
			GuardCell(x.Namespace), GuardCell(x.Pod), GuardCell(x.Container), GuardCell(x.Detail)}
		if err := f.w.Write(rec); err != nil {
			return fmt.Errorf("cannot write flag row: %w", err)
		}
	}
	return nil
}

// Flush flushes buffered findings.
func (f *FlagsWriter) Flush() error {
	f.w.Flush()
	if err := f.w.Error(); err != nil {
		return fmt.Errorf("cannot flush flags csv: %w", err)
	}
	return nil
}

// GuardCell keeps a text cell from being run as a formula when a CSV is
// opened in a spreadsheet (OWASP's CSV injection): a cell starting with
// '=', '+', '-', '@', a tab or a carriage return gets a leading apostrophe.
// Every CSV gpuledger writes (ledger.csv, flags.csv, the finance CSV, the
// FOCUS export) guards the text cells tenants can influence with it;
// numbers and times, which gpuledger writes itself, are left alone. Names
// Kubernetes accepts (namespaces, pods, containers, label values) start
// with a letter or digit, so they are never altered.
func GuardCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// FormatTime renders a UTC RFC 3339 time, with sub-second digits only when
// the time has them.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Decimals is the precision of every quantity in ledger.csv and the JSON
// lines export: 6 decimals, a micro-GPU-second (micro-MiB-second,
// micro-joule), the unit the chargeback report also counts in.
const Decimals = 6

// FormatFloat renders a quantity rounded to Decimals places, with '.', no
// exponent and no trailing zeros: the shortest decimal that is exact at
// that precision. Rounding first is what keeps float noise out
// (50.200000000000074 is written 50.2); it moves a value by at most half a
// micro-unit, so a GPU's rows still add up to the interval length well
// within the partition's 1e-6 relative tolerance.
func FormatFloat(v float64) string {
	const scale = 1e6 // 10^Decimals
	r := math.Round(v*scale) / scale
	if r == 0 {
		r = 0 // never "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
