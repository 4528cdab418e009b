package pricebook

import (
	"math/big"
	"testing"
)

func TestParseMemoryWeighted(t *testing.T) {
	b, err := Parse("p.yaml", []byte(`
currency: USD
policy: usage
memoryWeight: 0.3
memoryMiB:
  NVIDIA L40S: 46068
  A100-SXM4-80GB: 80000
rates: {A100-SXM4-80GB: 2.40}
defaultRate: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	if !b.MemoryWeighted() || b.MemoryWeight.Cmp(big.NewRat(3, 10)) != 0 {
		t.Errorf("memoryWeight = %v, want exactly 3/10", b.MemoryWeight)
	}
	for model, want := range map[string]int64{"L40S": 46068, "A100-SXM4-80GB": 80000, "H200-141GB": 143771, "A100-SXM4-40GB": 40960} {
		if got, ok := b.MemoryMiBFor(model); !ok || got != want {
			t.Errorf("MemoryMiBFor(%s) = %d %v, want %d (the book's entry over the built-in)", model, got, ok, want)
		}
	}
	if _, ok := b.MemoryMiBFor("L4"); ok {
		t.Error("L4 has no built-in size")
	}
	for _, w := range []string{"0", "1", "0.0", "1.000", `"0.25"`} {
		b, err := Parse("p.yaml", []byte("currency: USD\npolicy: usage\ndefaultRate: 1\nmemoryWeight: "+w+"\n"))
		if err != nil {
			t.Errorf("memoryWeight %s: %v", w, err)
			continue
		}
		if b.MemoryWeight == nil || b.MemoryWeight.Sign() < 0 || b.MemoryWeight.Cmp(big.NewRat(1, 1)) > 0 {
			t.Errorf("memoryWeight %s read as %v", w, b.MemoryWeight)
		}
	}
}

func TestParseFlat(t *testing.T) {
	b, err := Parse("p.yaml", []byte("currency: EUR\npolicy: flat\nidle: shared\nslotRates:\n  A100 SXM4 80GB: 800.00\n  H100-SXM5-80GB: 1250.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Policy != PolicyFlat || b.Idle != IdleShared {
		t.Errorf("policy %s idle %s", b.Policy, b.Idle)
	}
	if r, ok := b.SlotRateFor("A100-SXM4-80GB"); !ok || r.Format(2) != "800.00" {
		t.Errorf("A100 slot rate %s %v", r.Format(2), ok)
	}
	if _, ok := b.SlotRateFor("L4"); ok {
		t.Error("L4 has no slot rate")
	}
}

// TestParsePolicyErrors: each names the file, the line and the field.
func TestParsePolicyErrors(t *testing.T) {
	const usage = "currency: USD\npolicy: usage\ndefaultRate: 2\n"
	cases := []errCase{
		{"weight negative", usage + "memoryWeight: -0.1\n", []string{`p.yaml:4: memoryWeight: "-0.1" is outside 0..1`}},
		{"weight above one", usage + "memoryWeight: 1.5\n", []string{`p.yaml:4: memoryWeight: "1.5" is outside 0..1`}},
		{"weight text", usage + "memoryWeight: abc\n", []string{`p.yaml:4: memoryWeight: "abc" is not a number from 0 to 1`}},
		{"weight exponent", usage + "memoryWeight: 3e-1\n", []string{`p.yaml:4: memoryWeight: "3e-1" is not a number`}},
		{"weight nan", usage + "memoryWeight: .nan\n", []string{`p.yaml:4: memoryWeight: ".nan" is not a number`}},
		{"weight list", usage + "memoryWeight: [0.3]\n", []string{"p.yaml:4: memoryWeight: want a single value"}},
		{"weight empty", usage + "memoryWeight:\n", []string{"p.yaml:4: memoryWeight: empty"}},
		{"weight bool", usage + "memoryWeight: true\n", []string{"p.yaml:4: memoryWeight: want a number from 0 to 1 such as 0.3, not a bool"}},
		{"weight with allocation", "currency: USD\npolicy: allocation\ndefaultRate: 2\nmemoryWeight: 0.3\n",
			[]string{"p.yaml:4: memoryWeight: not used by policy allocation", "policy usage with memoryWeight"}},
		{"weight with flat", "currency: USD\npolicy: flat\nslotRates: {A100: 800}\nmemoryWeight: 0.3\n", []string{"p.yaml:4: memoryWeight: not used by policy flat"}},
		{"memory text", usage + "memoryMiB:\n  L40S: lots\n", []string{`p.yaml:5: memoryMiB.L40S: "lots": want the device's memory in whole MiB`}},
		{"memory zero", usage + "memoryMiB:\n  L40S: 0\n", []string{`p.yaml:5: memoryMiB.L40S: "0": want the device's memory in whole MiB`}},
		{"memory negative", usage + "memoryMiB:\n  L40S: -46068\n", []string{`p.yaml:5: memoryMiB.L40S: "-46068"`}},
		{"memory fraction", usage + "memoryMiB:\n  L40S: 46068.5\n", []string{`p.yaml:5: memoryMiB.L40S: "46068.5"`}},
		{"memory huge", usage + "memoryMiB:\n  L40S: 99999999999999999999\n", []string{`p.yaml:5: memoryMiB.L40S`}},
		{"memory list", usage + "memoryMiB: [1]\n", []string{"p.yaml:4: memoryMiB: want a mapping of GPU model to its memory in MiB"}},
		{"memory twice", usage + "memoryMiB:\n  L40S: 1\n  NVIDIA L40S: 2\n", []string{"p.yaml:6: memoryMiB.NVIDIA L40S: model L40S given twice (first on line 5)"}},
		{"flat without slotRates", "currency: USD\npolicy: flat\n", []string{"p.yaml:1: slotRates: missing: policy flat needs the price per GPU slot per month"}},
		{"flat empty slotRates", "currency: USD\npolicy: flat\nslotRates: {}\n", []string{"p.yaml:3: slotRates: empty"}},
		{"flat null slotRates", "currency: USD\npolicy: flat\nslotRates:\n", []string{"p.yaml:3: slotRates: empty"}},
		{"flat with rates", "currency: USD\npolicy: flat\nslotRates: {A100: 800}\nrates: {A100: 2}\ndefaultRate: 2\n",
			[]string{"p.yaml:4: rates: not used by policy flat", "p.yaml:5: defaultRate: not used by policy flat"}},
		{"flat negative", "currency: USD\npolicy: flat\nslotRates:\n  A100: -800\n", []string{`p.yaml:4: slotRates.A100: "-800" is negative`}},
		{"flat list price", "currency: USD\npolicy: flat\nslotRates:\n  A100: [800]\n", []string{"p.yaml:4: slotRates.A100: want a price per GPU slot per month"}},
		{"slotRates with usage", usage + "slotRates: {A100: 800}\n", []string{"p.yaml:4: slotRates: not used by policy usage"}},
		{"usage without defaultRate", "currency: USD\npolicy: usage\n", []string{"p.yaml:1: defaultRate: missing"}},
		{"flat misspelt", "currency: USD\npolicy: flat\nslotrates: {A100: 800}\n", []string{"p.yaml:3: slotrates: unknown field (did you mean slotRates?)"}},
	}
	runErrorCases(t, cases)
}

// TestBuiltinMemory: a book without memoryMiB entries knows the
// catalogued models' sizes (NVML's figures, written out here) and no
// other model's.
func TestBuiltinMemory(t *testing.T) {
	var b Book
	for model, want := range map[string]int64{"A100-SXM4-40GB": 40960, "A100-SXM4-80GB": 81920, "H100-SXM5-80GB": 81920, "H200-141GB": 143771} {
		if got, ok := b.MemoryMiBFor(model); !ok || got != want {
			t.Errorf("%s: built-in %d MiB (%v), want %d", model, got, ok, want)
		}
	}
	if got, ok := b.MemoryMiBFor("L40S"); ok {
		t.Errorf("L40S: built-in %d MiB, want none", got)
	}
}

func TestDerivedRate(t *testing.T) {
	r := DerivedRate(big.NewRat(800, 744))
	if r.Format(2) != "1.075268817" || r.Rat().Cmp(big.NewRat(800, 744)) != 0 {
		t.Errorf("800/744 = %s (%s)", r.Format(2), r.Rat().RatString())
	}
	if DerivedRate(big.NewRat(3, 2)).Format(2) != "1.50" || DerivedRate(nil).Format(2) != "0.00" || DerivedRate(big.NewRat(-1, 1)).Format(2) != "0.00" {
		t.Error("derived rates format")
	}
}
