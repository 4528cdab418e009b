package allocation

import "testing"

// A ledger value holding the separator cannot shift a line's fields.
func TestEncodeKeepsFieldsApart(t *testing.T) {
	ns, x := decode(encode("a"+sep+"b"+sep+"c"+sep+"d", "w", "p"+sep, "c", "n"))
	if ns != "a\uFFFDb\uFFFDc\uFFFDd" || x != [4]string{"w", "p\uFFFD", "c", "n"} {
		t.Errorf("decoded %q %q", ns, x)
	}
}
