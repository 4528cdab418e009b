package pricebook

import (
	"math/big"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadContractExample(t *testing.T) {
	b, err := Load(filepath.Join("testdata", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Currency != (Currency{Code: "USD", MinorUnit: 2}) {
		t.Errorf("currency = %+v", b.Currency)
	}
	if b.Timezone != "UTC" || b.Location.String() != "UTC" {
		t.Errorf("timezone = %q %v", b.Timezone, b.Location)
	}
	if b.TeamLabel != "team" || b.Policy != PolicyAllocation || b.Idle != IdlePlatform {
		t.Errorf("teamLabel %q policy %q idle %q", b.TeamLabel, b.Policy, b.Idle)
	}
	want := map[string]string{"A100-SXM4-80GB": "2.40", "H100-SXM5-80GB": "4.10"}
	if len(b.Rates) != len(want) {
		t.Fatalf("rates = %v", b.Rates)
	}
	for m, w := range want {
		r, known := b.RateFor(m)
		if !known || r.Format(2) != w {
			t.Errorf("rate %s = %s (known %v), want %s", m, r.Format(2), known, w)
		}
	}
	r, known := b.RateFor("L4")
	if known || r.Format(2) != "2.00" {
		t.Errorf("unknown model: rate %s known %v, want the default 2.00", r.Format(2), known)
	}
	if got := strings.Join(b.Models(), ","); got != "A100-SXM4-80GB,H100-SXM5-80GB" {
		t.Errorf("Models() = %s", got)
	}
}

func TestParseDefaultsAndForms(t *testing.T) {
	b, err := Parse("p.yaml", []byte(`
currency: JPY
policy: usage
rates:
  "NVIDIA A100 SXM4 80GB": "350"
  L4: .5
  H200: 2.123456789
defaultRate: 100
`))
	if err != nil {
		t.Fatal(err)
	}
	if b.Currency.MinorUnit != 0 || b.Timezone != "UTC" || b.TeamLabel != "team" || b.Idle != IdlePlatform {
		t.Errorf("defaults: %+v", b)
	}
	// YAML numbers are read from their text: no float64 on the way.
	exact := map[string]string{"A100-SXM4-80GB": "350", "L4": "1/2", "H200": "2123456789/1000000000"}
	for m, w := range exact {
		want, _ := new(big.Rat).SetString(w)
		if got := b.Rates[m].Rat(); got.Cmp(want) != 0 {
			t.Errorf("rate %s = %s, want %s", m, got.RatString(), want.RatString())
		}
	}
	if got := b.Rates["H200"].Format(0); got != "2.123456789" {
		t.Errorf("H200 formats as %s", got)
	}
}

func TestParseMinorUnits(t *testing.T) {
	for code, want := range map[string]int{"USD": 2, "EUR": 2, "JPY": 0, "KWD": 3, "CHF": 2, "GBP": 2, "CLF": 4, "KRW": 0, "BHD": 3} {
		b, err := Parse("p.yaml", []byte("currency: "+code+"\npolicy: allocation\ndefaultRate: 1\n"))
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		if b.Currency.MinorUnit != want {
			t.Errorf("%s minor unit = %d, want %d", code, b.Currency.MinorUnit, want)
		}
	}
}

func TestParseTimezones(t *testing.T) {
	b, err := Parse("p.yaml", []byte("currency: EUR\ntimezone: America/Los_Angeles\npolicy: allocation\nidle: shared\ndefaultRate: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Location.String() != "America/Los_Angeles" || b.Idle != IdleShared {
		t.Errorf("location %v idle %q", b.Location, b.Idle)
	}
}

// TestParseErrors: every problem names the file, the line and the field.
func TestParseErrors(t *testing.T) {
	const head = "currency: USD\npolicy: allocation\ndefaultRate: 2\n"
	cases := []errCase{
		{"empty", "", []string{"p.yaml", "empty file"}},
		{"not a mapping", "- a\n- b\n", []string{"p.yaml:1: (top level): want a mapping"}},
		{"missing all", "timezone: UTC\n", []string{"p.yaml:1: currency: missing", "p.yaml:1: policy: missing", "p.yaml:1: defaultRate: missing"}},
		{"lowercase currency", "currency: usd\npolicy: allocation\ndefaultRate: 2\n", []string{`p.yaml:1: currency: "usd" is not an ISO 4217 code`, "did you mean USD?"}},
		{"unknown currency", "currency: XYZ\npolicy: allocation\ndefaultRate: 2\n", []string{`p.yaml:1: currency: "XYZ" is not an active ISO 4217 currency`}},
		{"gold", "currency: XAU\npolicy: allocation\ndefaultRate: 2\n", []string{`p.yaml:1: currency: "XAU"`}},
		{"bad zone", head + "timezone: Mars/Olympus\n", []string{`p.yaml:4: timezone: "Mars/Olympus" is not an IANA time zone`}},
		{"local zone", head + "timezone: Local\n", []string{`p.yaml:4: timezone: "Local"`}},
		{"bad policy", "currency: USD\npolicy: requests\ndefaultRate: 2\n", []string{`p.yaml:2: policy: "requests": want allocation or usage`}},
		{"bad idle", head + "idle: ignore\n", []string{`p.yaml:4: idle: "ignore": want platform or shared`}},
		{"bad label", head + "teamLabel: \"bad label!\"\n", []string{`p.yaml:4: teamLabel: "bad label!" is not a Kubernetes label key`}},
		{"unknown field", head + "defaultrate: 3\n", []string{"p.yaml:4: defaultrate: unknown field (did you mean defaultRate?)"}},
		{"repeated field", head + "policy: usage\n", []string{"p.yaml:4: policy: given twice (first on line 2)"}},
		{"negative rate", head + "rates:\n  A100: -1\n", []string{`p.yaml:5: rates.A100: "-1" is negative`}},
		{"exponent", head + "rates:\n  A100: 1e3\n", []string{`p.yaml:5: rates.A100: "1e3" is not a decimal number`}},
		{"fraction", head + "rates:\n  A100: 1/3\n", []string{`p.yaml:5: rates.A100: "1/3" is not a decimal number`}},
		{"inf", head + "rates:\n  A100: .inf\n", []string{`p.yaml:5: rates.A100: ".inf" is not a decimal number`}},
		{"text", head + "rates:\n  A100: cheap\n", []string{`p.yaml:5: rates.A100: "cheap"`}},
		{"list rate", head + "rates:\n  A100: [1, 2]\n", []string{"p.yaml:5: rates.A100: want a rate per GPU-hour"}},
		{"null rate", head + "rates:\n  A100:\n", []string{"p.yaml:5: rates.A100: want a rate per GPU-hour"}},
		{"rates list", head + "rates: [1, 2]\n", []string{"p.yaml:4: rates: want a mapping of GPU model to rate"}},
		{"same model twice", head + "rates:\n  A100-SXM4-80GB: 2\n  NVIDIA A100 SXM4 80GB: 3\n", []string{"p.yaml:6: rates.NVIDIA A100 SXM4 80GB: model A100-SXM4-80GB priced twice (first on line 5)"}},
		{"bad default", "currency: USD\npolicy: allocation\ndefaultRate: free\n", []string{`p.yaml:3: defaultRate: "free"`}},
		{"syntax", "currency: [USD\n", []string{"p.yaml"}},
		{"two problems", "currency: USD\npolicy: x\nidle: y\ndefaultRate: 1\n", []string{"p.yaml:2: policy", "p.yaml:3: idle"}},
	}
	runErrorCases(t, cases)
}

// errCase is a price book that must not parse and what its error says.
type errCase struct {
	name, yaml string
	want       []string
}

func runErrorCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("no error for\n%s", c.yaml)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("err = %v", err)
	}
}

func TestRateFormat(t *testing.T) {
	cases := []struct {
		in   string
		min  int
		want string
	}{
		{"2.4", 2, "2.40"}, {"2.40", 2, "2.40"}, {"2.400", 2, "2.40"}, {"4", 2, "4.00"}, {"350", 0, "350"},
		{"2.123456789", 2, "2.123456789"}, {".5", 0, "0.5"}, {"0", 3, "0.000"}, {"1.", 2, "1.00"},
	}
	for _, c := range cases {
		r, err := ParseRate(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := r.Format(c.min); got != c.want {
			t.Errorf("ParseRate(%q).Format(%d) = %q, want %q", c.in, c.min, got, c.want)
		}
	}
	var zero Rate
	if zero.Format(2) != "0.00" || zero.Float64() != 0 {
		t.Errorf("zero rate formats as %q", zero.Format(2))
	}
}
