package outformat

import (
	"bytes"
	"io"
	"testing"
)

type format string

func TestTable(t *testing.T) {
	tab := Table[format, int]{Kind: "test", What: "a test value", Specs: []Spec[format, int]{
		{"a", func(w io.Writer, v int) error { _, err := w.Write([]byte{'a', byte('0' + v)}); return err }},
		{"b", func(w io.Writer, v int) error { _, err := w.Write([]byte{'b'}); return err }},
		{"c", func(w io.Writer, v int) error { return nil }},
	}}
	if got := tab.Names(); got != "a, b or c" {
		t.Errorf("Names = %q", got)
	}
	if f, err := tab.Parse("b"); err != nil || f != "b" {
		t.Errorf("Parse(b) = %q, %v", f, err)
	}
	if _, err := tab.Parse("d"); err == nil || err.Error() != `unknown test format "d": want a, b or c` {
		t.Errorf("Parse(d) err = %v", err)
	}
	var b bytes.Buffer
	if err := tab.Write(&b, 7, "a"); err != nil || b.String() != "a7" {
		t.Errorf("Write(a) = %q, %v", b.String(), err)
	}
	if err := tab.Write(&b, 7, "x"); err == nil || err.Error() != `cannot write a test value: unknown format "x": want a, b or c` {
		t.Errorf("Write(x) err = %v", err)
	}
	one := Table[format, int]{Specs: tab.Specs[:1]}
	if got := one.Names(); got != "a" {
		t.Errorf("one format: Names = %q", got)
	}
}
