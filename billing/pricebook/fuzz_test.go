package pricebook

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any input gives a book or an error, never a panic, and a book
// always satisfies what the report relies on.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "prices.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("currency: JPY\npolicy: usage\nidle: shared\ntimezone: Asia/Tokyo\nrates: {L4: 350}\ndefaultRate: 100\n"))
	f.Add([]byte("currency: KWD\npolicy: allocation\nrates:\n  &a A100: 2.123456789\n  *a : 1\ndefaultRate: .5\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("currency: USD\npolicy: allocation\ndefaultRate: 1e3\nrates: [1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if _, ok := LookupCurrency(b.Currency.Code); !ok {
			t.Fatalf("accepted unknown currency %q", b.Currency.Code)
		}
		if b.Location == nil {
			t.Fatal("accepted a book without a location")
		}
		if b.Policy != PolicyAllocation && b.Policy != PolicyUsage {
			t.Fatalf("accepted policy %q", b.Policy)
		}
		if b.Idle != IdlePlatform && b.Idle != IdleShared {
			t.Fatalf("accepted idle %q", b.Idle)
		}
		for m, r := range b.Rates {
			if m == "" || r.Rat().Sign() < 0 {
				t.Fatalf("accepted rate %q: %s", m, r)
			}
			if back, err := ParseRate(r.String()); err != nil || !back.Equal(r) {
				t.Fatalf("rate %s does not read back: %v", r, err)
			}
		}
	})
}
