package pricebook

import (
	"math/big"
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
	f.Add([]byte("currency: USD\npolicy: quota\ndefaultRate: 2\nquota: {source: kai, rate: 1.5, aboveRate: 3, extra: &q [*q]}\n"))
	f.Add([]byte("currency: USD\npolicy: usage\nmemoryWeight: 0.3\nmemoryMiB: {L40S: 46068}\nrates: {L40S: 1.9}\ndefaultRate: 2\n"))
	f.Add([]byte("currency: USD\npolicy: usage\nmemoryWeight: -0.1\ndefaultRate: 2\n"))
	f.Add([]byte("currency: USD\npolicy: usage\nmemoryWeight: 1.5\nmemoryMiB: {L40S: 0}\ndefaultRate: 2\n"))
	f.Add([]byte("currency: USD\npolicy: usage\nmemoryWeight: abc\nmemoryMiB: [1]\ndefaultRate: 2\n"))
	f.Add([]byte("currency: EUR\npolicy: flat\nidle: shared\nslotRates: {A100-SXM4-80GB: 800.00, H100 SXM5 80GB: 1250}\n"))
	f.Add([]byte("currency: EUR\npolicy: flat\nslotRates: {}\nrates: {A100: 1}\nmemoryWeight: 1\n"))
	f.Add([]byte("currency: USD\npolicy: usage\ndefaultRate: 2\nenergy: {rate: 150/MWh, carbonIntensity: 0.35 kgCO2e/kWh}\n"))
	f.Add([]byte("currency: USD\npolicy: usage\ndefaultRate: 2\nenergy: {rate: -1 /kWh, carbonIntensity: 9e9, x: 1}\n"))
	f.Add([]byte("currency: USD\npolicy: usage\ndefaultRate: 2\nenergy: {carbonIntensity: 400, carbonIntensityByNodeLabel: {label: topology.kubernetes.io/region, intensities: {eu-north-1: 30, us-east-1: 0.38 kgCO2e/kWh}}}\n"))
	f.Add([]byte("currency: USD\npolicy: usage\ndefaultRate: 2\nenergy: {carbonIntensityByNodeLabel: {label: -x/, intensities: {\"a b\": -1, c: [1]}, y: 2}}\n"))
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
		if b.Policy != PolicyAllocation && b.Policy != PolicyUsage && b.Policy != PolicyFlat {
			t.Fatalf("accepted policy %q", b.Policy)
		}
		if b.Idle != IdlePlatform && b.Idle != IdleShared {
			t.Fatalf("accepted idle %q", b.Idle)
		}
		switch b.Policy {
		case PolicyAllocation, PolicyUsage:
			if len(b.SlotRates) != 0 {
				t.Fatalf("policy %s accepted slotRates", b.Policy)
			}
		case PolicyFlat:
			if len(b.SlotRates) == 0 || len(b.Rates) != 0 {
				t.Fatalf("policy flat with %d slot rates and %d rates", len(b.SlotRates), len(b.Rates))
			}
		}
		if w := b.MemoryWeight; w != nil {
			if b.Policy != PolicyUsage || w.Sign() < 0 || w.Cmp(big.NewRat(1, 1)) > 0 {
				t.Fatalf("accepted memoryWeight %s under policy %s", w.RatString(), b.Policy)
			}
		}
		for m, mib := range b.MemoryMiB {
			if m == "" || mib <= 0 || mib > maxMemoryMiB {
				t.Fatalf("accepted memoryMiB %q: %d", m, mib)
			}
		}
		for m, r := range b.SlotRates {
			if m == "" || r.Rat().Sign() < 0 {
				t.Fatalf("accepted slot rate %q: %s", m, r)
			}
		}
		if e := b.Energy; e != nil {
			if e.Rate == nil && e.CarbonIntensity == nil {
				t.Fatal("an energy section with neither figure")
			}
			if e.Rate != nil && e.Rate.Rat().Sign() < 0 {
				t.Fatalf("accepted energy rate %s", e.Rate)
			}
			if c := e.CarbonIntensity; c != nil && (c.Sign() < 0 || c.Cmp(big.NewRat(maxCarbonIntensity, 1)) > 0) {
				t.Fatalf("accepted carbon intensity %s", c.RatString())
			}
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
