package report

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// Format is one way a report is written: every front end (gpuledger
// report, serve, the demo) chooses and writes through the table below, so
// the same report is the same bytes wherever it is read.
type Format string

// The formats, in the order FormatNames lists them.
const (
	// FormatCSV is the finance CSV (docs/report.md).
	FormatCSV Format = "csv"
	// FormatJSON is the same numbers as JSON.
	FormatJSON Format = "json"
	// FormatHTML is the self-contained HTML report.
	FormatHTML Format = "html"
	// FormatFOCUS is a FOCUS cost and usage CSV in r.FOCUSVersion
	// (docs/focus.md).
	FormatFOCUS Format = "focus"
	// FormatFOCUSJSONL is the same rows as JSON lines.
	FormatFOCUSJSONL Format = "focus-jsonl"
)

// formatSpec is what a format is written by and how its files are named
// and served.
type formatSpec struct {
	f     Format
	write func(io.Writer, *Report) error
	// devices: the format writes one row per device, so Write first
	// reads the per-device aggregates (LoadDevices).
	devices bool
	// exts are the file extensions that hold the format, the first the
	// one to name a file by.
	exts        []string
	contentType string
}

var formats = []formatSpec{
	{f: FormatCSV, write: WriteCSV, exts: []string{".csv"}, contentType: "text/csv; charset=utf-8"},
	{f: FormatJSON, write: WriteJSON, exts: []string{".json"}, contentType: "application/json"},
	{f: FormatHTML, write: WriteHTML, exts: []string{".html", ".htm"}, contentType: "text/html; charset=utf-8"},
	{f: FormatFOCUS, write: WriteFOCUS, devices: true, exts: []string{".csv"}, contentType: "text/csv; charset=utf-8"},
	{f: FormatFOCUSJSONL, write: WriteFOCUSJSONL, devices: true, exts: []string{".jsonl", ".ndjson"}, contentType: "application/jsonl"},
}

func (f Format) spec() (formatSpec, bool) {
	i := slices.IndexFunc(formats, func(s formatSpec) bool { return s.f == f })
	if i < 0 {
		return formatSpec{}, false
	}
	return formats[i], true
}

// FormatNames lists the formats for a message: "csv, json, html, focus
// or focus-jsonl".
func FormatNames() string {
	names := make([]string, len(formats))
	for i, s := range formats {
		names[i] = string(s.f)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseFormat is the format a name names.
func ParseFormat(name string) (Format, error) {
	if _, ok := Format(name).spec(); !ok {
		return "", fmt.Errorf("unknown report format %q: want %s", name, FormatNames())
	}
	return Format(name), nil
}

// FormatFromName is the format a file's extension names (case does not
// matter): the first format of the table that extension holds, the
// finance CSV for any other name.
func FormatFromName(path string) Format {
	ext := strings.ToLower(filepath.Ext(path))
	for _, s := range formats {
		if slices.Contains(s.exts, ext) {
			return s.f
		}
	}
	return FormatCSV
}

// Holds reports whether a file with extension ext (".csv", any case)
// holds format f.
func (f Format) Holds(ext string) bool {
	s, _ := f.spec()
	return slices.Contains(s.exts, strings.ToLower(ext))
}

// Ext is the extension to name a file of format f by, "" for an unknown
// format.
func (f Format) Ext() string {
	s, ok := f.spec()
	if !ok {
		return ""
	}
	return s.exts[0]
}

// ContentType is the media type format f is served as, "" for an
// unknown format.
func (f Format) ContentType() string {
	s, _ := f.spec()
	return s.contentType
}

// ReadsLedger reports whether Write reads src for format f (the FOCUS
// formats read the per-device aggregates).
func (f Format) ReadsLedger() bool {
	s, _ := f.spec()
	return s.devices
}

// Write writes r in format f to w. The FOCUS formats first read the
// period's per-device aggregates from src (LoadDevices) and write the
// version r.FOCUSVersion names; the others never read src, which may then
// be nil.
func Write(ctx context.Context, w io.Writer, src Source, r *Report, f Format) error {
	s, ok := f.spec()
	if !ok {
		return fmt.Errorf("cannot write report: unknown format %q: want %s", f, FormatNames())
	}
	if s.devices {
		if src == nil {
			return fmt.Errorf("cannot write report as %s: no ledger to read its per-device aggregates from", f)
		}
		if err := LoadDevices(ctx, src, r); err != nil {
			return err
		}
	}
	return s.write(w, r)
}

// IsFOCUSVersion reports whether WriteFOCUS and WriteFOCUSJSONL write
// FOCUS version v (FOCUSVersion13 or FOCUSVersion14; Report.FOCUSVersion
// may also be empty, for 1.3).
func IsFOCUSVersion(v string) bool {
	_, err := focusHeaderFor(v)
	return v != "" && err == nil
}
