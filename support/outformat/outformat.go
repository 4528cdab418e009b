// Package outformat is the one way a command chooses and writes an output
// format by name: a table of formats and their writers, in the order a
// message lists them. The advice and whatif write through it; the report's
// table (billing/report/format.go) adds file names and content types.
package outformat

import (
	"fmt"
	"io"
	"strings"
)

// Spec is one format: its name and its writer.
type Spec[F ~string, V any] struct {
	Name  F
	Write func(io.Writer, V) error
}

// Table is a set of formats of what is written (What, as messages name
// it: "advice", "whatif result") in the order Names lists them.
type Table[F ~string, V any] struct {
	// Kind names the formats in a parse error ("unknown advice format").
	Kind string
	// What names what is written in a write error ("cannot write advice").
	What  string
	Specs []Spec[F, V]
}

func (t Table[F, V]) writer(f F) func(io.Writer, V) error {
	for _, s := range t.Specs {
		if s.Name == f {
			return s.Write
		}
	}
	return nil
}

// Names lists the formats for a message: "text, json or prom".
func (t Table[F, V]) Names() string {
	names := make([]string, len(t.Specs))
	for i, s := range t.Specs {
		names[i] = string(s.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Parse is the format a name names.
func (t Table[F, V]) Parse(name string) (F, error) {
	if t.writer(F(name)) == nil {
		return "", fmt.Errorf("unknown %s format %q: want %s", t.Kind, name, t.Names())
	}
	return F(name), nil
}

// Write writes v in format f to w.
func (t Table[F, V]) Write(w io.Writer, v V, f F) error {
	write := t.writer(f)
	if write == nil {
		return fmt.Errorf("cannot write %s: unknown format %q: want %s", t.What, f, t.Names())
	}
	return write(w, v)
}
