package allocation

import "testing"

// A ledger value holding the separator cannot shift a line's fields.
func TestEncodeKeepsFieldsApart(t *testing.T) {
	ns, x := decode(encode("a"+sep+"b"+sep+"c"+sep+"d", "w", "p"+sep, "c", "n"))
	if ns != "a\uFFFDb\uFFFDc\uFFFDd" || x != [4]string{"w", "p\uFFFD", "c", "n"} {
		t.Errorf("decoded %q %q", ns, x)
	}
}

// decode(encode(...)) gives back each field, empty ones included; a
// namespace the source did not encode comes back whole.
func TestDecodeIsEncodesInverse(t *testing.T) {
	for _, f := range [][5]string{{"ns", "wl", "pod", "ctr", "node"}, {"", "", "", "", ""}, {"ns", "", "p", "", ""}, {"a b", "é", "🙂", "x", "y"}} {
		ns, x := decode(encode(f[0], f[1], f[2], f[3], f[4]))
		if ns != f[0] || x != [4]string{f[1], f[2], f[3], f[4]} {
			t.Errorf("%q: decoded %q %q", f, ns, x)
		}
	}
	for _, ns := range []string{"plain", "", "a" + sep + "b", "a" + sep + "b" + sep + "c" + sep + "d" + sep + "e" + sep + "f"} {
		if got, x := decode(ns); got != ns || x != [4]string{} {
			t.Errorf("decode(%q) = %q %q, want it whole", ns, got, x)
		}
	}
}
