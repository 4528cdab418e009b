package advicereport

import (
	"io"

	"github.com/gpuledger/gpuledger/support/outformat"
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

var formats = outformat.Table[Format, *Advice]{Kind: "advice", What: "advice", Specs: []outformat.Spec[Format, *Advice]{
	{Name: FormatText, Write: WriteText},
	{Name: FormatJSON, Write: WriteJSON},
	{Name: FormatHTML, Write: WriteHTML},
	{Name: FormatProm, Write: WriteProm},
}}

// FormatNames lists the formats for a message: "text, json, html or prom".
func FormatNames() string { return formats.Names() }

// ParseFormat is the format a name names.
func ParseFormat(name string) (Format, error) { return formats.Parse(name) }

// Write writes a in format f to w.
func Write(w io.Writer, a *Advice, f Format) error { return formats.Write(w, a, f) }
