package advicereport

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Format is one way the advice is written: gpuledger advise, its exporter
// and serve all choose and write through the table below.
type Format string

// The formats, in the order FormatNames lists them.
const (
	// FormatText is the plain text gpuledger advise prints by default.
	FormatText Format = "text"
	// FormatJSON is the advice as JSON (docs/advisor.md).
	FormatJSON Format = "json"
	// FormatHTML is the page styled like the chargeback report.
	FormatHTML Format = "html"
	// FormatProm is the gpuledger_advice_* series in Prometheus text
	// exposition.
	FormatProm Format = "prom"
)

// formatSpec is a format and its writer.
type formatSpec struct {
	f     Format
	write func(io.Writer, *Advice) error
}

var formats = []formatSpec{
	{FormatText, WriteText},
	{FormatJSON, WriteJSON},
	{FormatHTML, WriteHTML},
	{FormatProm, WriteProm},
}

func (f Format) writer() func(io.Writer, *Advice) error {
	i := slices.IndexFunc(formats, func(s formatSpec) bool { return s.f == f })
	if i < 0 {
		return nil
	}
	return formats[i].write
}

// FormatNames lists the formats for a message: "text, json, html or prom".
func FormatNames() string {
	names := make([]string, len(formats))
	for i, s := range formats {
		names[i] = string(s.f)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseFormat is the format a name names.
func ParseFormat(name string) (Format, error) {
	if Format(name).writer() == nil {
		return "", fmt.Errorf("unknown advice format %q: want %s", name, FormatNames())
	}
	return Format(name), nil
}

// Write writes a in format f to w.
func Write(w io.Writer, a *Advice, f Format) error {
	write := f.writer()
	if write == nil {
		return fmt.Errorf("cannot write advice: unknown format %q: want %s", f, FormatNames())
	}
	return write(w, a)
}
