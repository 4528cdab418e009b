package advicereport

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestWriteEveryFormat: the four names gpuledger advise takes, each
// written as its writer writes it; any other name is refused, naming it.
func TestWriteEveryFormat(t *testing.T) {
	a := layoutAdvice(t)
	for name, write := range map[string]func(io.Writer, *Advice) error{"text": WriteText, "json": WriteJSON, "html": WriteHTML, "prom": WriteProm} {
		f, err := ParseFormat(name)
		if err != nil {
			t.Fatalf("ParseFormat(%q): %v", name, err)
		}
		var got, want bytes.Buffer
		if err := Write(&got, a, f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := write(&want, a); err != nil {
			t.Fatal(err)
		}
		if got.Len() == 0 || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: Write differs from the format's writer (%d bytes, want %d)", name, got.Len(), want.Len())
		}
	}
	for _, name := range []string{"", "csv", "TEXT", "prometheus"} {
		if _, err := ParseFormat(name); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "text, json, html or prom") {
			t.Errorf("ParseFormat(%q): %v, want an error naming it and the formats", name, err)
		}
		if err := Write(io.Discard, a, Format(name)); err == nil {
			t.Errorf("Write in %q: no error", name)
		}
	}
}
