package pricebook

import (
	"math/big"
	"strings"
	"testing"
)

const energyHead = "currency: EUR\npolicy: allocation\ndefaultRate: 2\n"

func TestParseEnergy(t *testing.T) {
	for _, c := range []struct {
		yaml           string
		rate, grams    string // exact rationals; "" when absent
		rateText, show string
	}{
		{"energy:\n  rate: 0.1234\n  carbonIntensity: 412.5\n", "1234/10000", "825/2", "0.1234", ""},
		{"energy: {rate: \"0.30\", carbonIntensity: 350 gCO2e/kWh}\n", "3/10", "350", "0.30", ""},
		{"energy: {rate: 150/MWh, carbonIntensity: 0.35 kgCO2e/kWh}\n", "3/20", "350", "0.15", ""},
		{"energy: {rate: 0.2/kWh, carbonIntensity: 420 kgCO2e/MWh}\n", "1/5", "420", "0.2", ""},
		{"energy: {carbonIntensity: 0.4 tCO2e/MWh}\n", "", "400", "", ""},
		{"energy: {rate: 0.08}\n", "2/25", "", "0.08", ""},
		{"energy: {rate: 0}\n", "0", "", "0", ""},
	} {
		b, err := Parse("p.yaml", []byte(energyHead+c.yaml))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if b.Energy == nil {
			t.Errorf("%q: no energy section", c.yaml)
			continue
		}
		check := func(what string, got *big.Rat, want string) {
			if want == "" {
				if got != nil {
					t.Errorf("%q: %s = %s, want none", c.yaml, what, got.RatString())
				}
				return
			}
			w, _ := new(big.Rat).SetString(want)
			if got == nil || got.Cmp(w) != 0 {
				t.Errorf("%q: %s = %v, want %s", c.yaml, what, got, want)
			}
		}
		var rate *big.Rat
		if b.Energy.Rate != nil {
			rate = b.Energy.Rate.Rat()
			if s := b.Energy.Rate.String(); s != strings.TrimRight(strings.TrimRight(c.rateText, "0"), ".") && s != c.rateText {
				t.Errorf("%q: rate prints %s", c.yaml, s)
			}
		}
		check("rate", rate, c.rate)
		check("carbonIntensity", b.Energy.CarbonIntensity, c.grams)
	}
	b, err := Parse("p.yaml", []byte(energyHead+"energy:\n  carbonIntensity: 400\n  carbonIntensityByNode:\n    gpu-eu-1: 0.03 kgCO2e/kWh\n    gpu-us-1: 380\n"))
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]int64{"gpu-eu-1": 30, "gpu-us-1": 380, "other": 400} {
		if got := b.Energy.IntensityFor(node); got.Cmp(big.NewRat(want, 1)) != 0 {
			t.Errorf("node %s: %s gCO2e/kWh, want %d", node, got.RatString(), want)
		}
	}
	for _, y := range []string{"", "energy:\n", "energy: {}\n"} {
		b, err := Parse("p.yaml", []byte(energyHead+y))
		if err != nil || b.Energy != nil {
			t.Errorf("%q: energy %+v, err %v: want none", y, b, err)
		}
	}
}

// TestParseEnergyErrors: every problem at once, each with its line.
func TestParseEnergyErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"negative rate", "energy:\n  rate: -0.12\n", []string{`p.yaml:5: energy.rate: "-0.12" is negative`}},
		{"negative intensity", "energy:\n  carbonIntensity: -5\n", []string{`p.yaml:5: energy.carbonIntensity: "-5" is negative`}},
		{"unknown unit", "energy:\n  rate: 0.12 EUR/kWh\n  carbonIntensity: 300 lbCO2/kWh\n", []string{
			`p.yaml:5: energy.rate: "0.12 EUR/kWh": unknown unit "EUR/kWh"`, "want a plain number or one of /MWh, /kWh",
			`p.yaml:6: energy.carbonIntensity: "300 lbCO2/kWh": unknown unit "lbCO2/kWh"`}},
		{"unit case", "energy:\n  carbonIntensity: 300 g/kwh\n", []string{`p.yaml:5: energy.carbonIntensity: "300 g/kwh": unknown unit "g/kwh" (did you mean gCO2e/kWh?)`}},
		{"misspelt key", "energy:\n  carbonintensity: 300\n  price: 0.1\n", []string{
			"p.yaml:5: energy.carbonintensity: unknown field (did you mean carbonIntensity?)",
			"p.yaml:6: energy.price: unknown field (want rate, carbonIntensity, carbonIntensityByNode, carbonIntensityByNodeLabel)"}},
		{"not a mapping", "energy: 0.12\n", []string{"p.yaml:4: energy: want a mapping of rate, carbonIntensity, carbonIntensityByNode, carbonIntensityByNodeLabel, not a value"}},
		{"twice", "energy:\n  rate: 0.1\n  rate: 0.2\n", []string{"p.yaml:6: energy.rate: given twice (first on line 5)"}},
		{"not a number", "energy:\n  rate: cheap\n  carbonIntensity: [1]\n", []string{
			`p.yaml:5: energy.rate: "cheap" is not a plain decimal number: want a price per kWh`, "p.yaml:6: energy.carbonIntensity: want grams of CO2e per kWh"}},
		{"too much carbon", "energy:\n  carbonIntensity: 20 kgCO2e/kWh\n", []string{`p.yaml:5: energy.carbonIntensity: "20 kgCO2e/kWh" is more than 10000 gCO2e/kWh`}},
		{"per region", "energy:\n  carbonIntensity:\n    eu-north-1: 30\n    us-east-1: 380\n", []string{
			"p.yaml:6: energy.carbonIntensity: one figure for the nodes without their own (such as 350); figures per node go in carbonIntensityByNode, per node label such as a region in carbonIntensityByNodeLabel"}},
		{"by label without a default", "energy:\n  carbonIntensityByNodeLabel: {label: topology.kubernetes.io/region, intensities: {eu: 30}}\n", []string{
			"p.yaml:5: energy.carbonIntensity: missing: carbonIntensityByNodeLabel (line 5) needs carbonIntensity for the nodes without the label or with a value it does not list"}},
		{"by label bad key", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNodeLabel:\n    label: \"-region/\"\n    intensities: {eu: 30}\n", []string{
			"p.yaml:7: energy.carbonIntensityByNodeLabel.label: want a Kubernetes node label key such as topology.kubernetes.io/region"}},
		{"by label missing parts", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNodeLabel: {}\n", []string{
			"p.yaml:6: energy.carbonIntensityByNodeLabel.label: missing", "p.yaml:6: energy.carbonIntensityByNodeLabel.intensities: missing"}},
		{"by label not a mapping", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNodeLabel: region\n", []string{
			"p.yaml:6: energy.carbonIntensityByNodeLabel: want a mapping of label, intensities, not a value"}},
		{"by label bad figures", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNodeLabel:\n    label: region\n    intensities:\n      eu: -3\n      us: 5 lb/kWh\n      eu: 4\n      \"bad value!\": 1\n      ap: 20 kgCO2e/kWh\n    zone: x\n", []string{
			`p.yaml:9: energy.carbonIntensityByNodeLabel.intensities.eu: "-3" is negative`,
			`p.yaml:10: energy.carbonIntensityByNodeLabel.intensities.us: "5 lb/kWh": unknown unit "lb/kWh"`,
			"p.yaml:11: energy.carbonIntensityByNodeLabel.intensities.eu: label value given twice (first on line 9)",
			`p.yaml:12: energy.carbonIntensityByNodeLabel.intensities: "bad value!" is not a Kubernetes label value`,
			`p.yaml:13: energy.carbonIntensityByNodeLabel.intensities.ap: "20 kgCO2e/kWh" is more than 10000 gCO2e/kWh`,
			"p.yaml:14: energy.carbonIntensityByNodeLabel.zone: unknown field (want label, intensities)"}},
		{"by label intensities not a mapping", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNodeLabel: {label: region, intensities: [30]}\n", []string{
			"p.yaml:6: energy.carbonIntensityByNodeLabel.intensities: want a mapping of label value to grams of CO2e per kWh"}},
		{"by node without a default", "energy:\n  carbonIntensityByNode: {n1: 30}\n", []string{
			"p.yaml:5: energy.carbonIntensity: missing: carbonIntensityByNode (line 5) needs carbonIntensity for the nodes it does not list"}},
		{"bad node figures", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNode:\n    n1: -3\n    n2: 5 lb/kWh\n    n1: 4\n    n3: [1]\n", []string{
			`p.yaml:7: energy.carbonIntensityByNode.n1: "-3" is negative`,
			`p.yaml:8: energy.carbonIntensityByNode.n2: "5 lb/kWh": unknown unit "lb/kWh"`,
			"p.yaml:9: energy.carbonIntensityByNode.n1: node given twice (first on line 7)",
			"p.yaml:10: energy.carbonIntensityByNode.n3: want grams of CO2e per kWh"}},
		{"by node not a mapping", "energy:\n  carbonIntensity: 300\n  carbonIntensityByNode: 30\n", []string{
			"p.yaml:6: energy.carbonIntensityByNode: want a mapping of node name to grams of CO2e per kWh"}},
		{"exponent", "energy:\n  rate: 1e-3\n", []string{`p.yaml:5: energy.rate: "1e-3" is not a plain decimal number`}},
		{"top-level typo", "Energy: {rate: 1}\n", []string{"p.yaml:4: Energy: unknown field (did you mean energy?)"}},
	} {
		_, err := Parse("p.yaml", []byte(energyHead+c.yaml))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nlacks %q", c.name, err, w)
			}
		}
	}
}

// TestParseEnergyByNodeLabel: figures by a node label, and the precedence
// node name > label value > carbonIntensity.
func TestParseEnergyByNodeLabel(t *testing.T) {
	b, err := Parse("p.yaml", []byte(energyHead+`energy:
  carbonIntensity: 400
  carbonIntensityByNode: {gpu-special: 5}
  carbonIntensityByNodeLabel:
    label: topology.kubernetes.io/region
    intensities: {eu-north-1: 0.03 kgCO2e/kWh, us-east-1: 380}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := b.Energy.CarbonIntensityByNodeLabel
	if l == nil || l.Label != "topology.kubernetes.io/region" || len(l.Intensities) != 2 {
		t.Fatalf("by label = %+v", l)
	}
	if !b.Energy.PerNode() {
		t.Error("PerNode false with figures by label")
	}
	for _, c := range []struct {
		node, value string
		labelled    bool
		want        int64
	}{
		{"n1", "eu-north-1", true, 30},
		{"n2", "us-east-1", true, 380},
		{"n3", "ap-south-1", true, 400}, // a value not listed
		{"n4", "", false, 400},          // no value recorded
		{"n5", "eu-north-1", false, 400},
		{"gpu-special", "us-east-1", true, 5}, // the name wins
	} {
		if got := b.Energy.IntensityOf(c.node, c.value, c.labelled); got.Cmp(big.NewRat(c.want, 1)) != 0 {
			t.Errorf("%+v: %s gCO2e/kWh, want %d", c, got.RatString(), c.want)
		}
	}
	b, err = Parse("p.yaml", []byte(energyHead+"energy: {carbonIntensity: 400}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Energy.PerNode() || b.Energy.CarbonIntensityByNodeLabel != nil {
		t.Error("one figure reads as per node")
	}
}
