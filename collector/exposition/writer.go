package exposition

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// appendFamily appends one family of a snapshot in the text format 0.0.4
// or, with om, in OpenMetrics 1.0, byte for byte as expfmt writes it: the
// HELP and TYPE lines, then per series the name, the cached label text and
// the value. Sample names are the family name in both formats (an
// OpenMetrics counter family drops _total, its samples keep it). Created
// timestamps are left out, as promhttp leaves them out by default.
func appendFamily(b []byte, fs *familySamples, om bool) []byte {
	if om {
		b = append(b, fs.f.omHead...)
	} else {
		b = append(b, fs.f.textHead...)
	}
	name := fs.f.name
	for _, s := range fs.samples {
		b = append(b, name...)
		b = append(b, s.ls.text...)
		b = append(b, ' ')
		if om {
			b = appendOpenMetricsFloat(b, s.v)
		} else {
			b = appendTextFloat(b, s.v)
		}
		b = append(b, '\n')
	}
	return b
}

// appendTextFloat formats a value as expfmt does in the text format 0.0.4
// (so -0 is written 0).
func appendTextFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendOpenMetricsFloat formats a value as expfmt does in OpenMetrics,
// where a float always shows a dot or an exponent.
func appendOpenMetricsFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, "1.0"...)
	case f == 0:
		return append(b, "0.0"...)
	case f == -1:
		return append(b, "-1.0"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	if !bytes.ContainsAny(b[start:], "e.") {
		b = append(b, '.', '0')
	}
	return b
}

// scrapeBuffer is the body of one scrape, reused through a pool. It is the
// writer expfmt encodes the Go and process families into: with WriteString,
// WriteByte and WriteRune expfmt writes to it directly, without a bufio
// layer in between.
type scrapeBuffer struct{ b []byte }

func (w *scrapeBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *scrapeBuffer) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

func (w *scrapeBuffer) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *scrapeBuffer) WriteRune(r rune) (int, error) {
	n := len(w.b)
	w.b = utf8.AppendRune(w.b, r)
	return len(w.b) - n, nil
}
