package pricebook

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Energy is the price book's optional energy section: what a kWh costs
// and how much CO2e the grid emits per kWh. Both figures are informational:
// the report shows each line's energy cost and CO2e beside its amount and
// never adds them to it.
type Energy struct {
	// Rate is the money per kWh in the book's currency; nil when the book
	// names none.
	Rate *Rate
	// CarbonIntensity is grams of CO2e per kWh, exact; nil when the book
	// names none.
	CarbonIntensity *big.Rat
	// CarbonIntensityByNode gives nodes, by name, their own intensity
	// (gCO2e per kWh); nodes not listed take CarbonIntensity. Empty when
	// the book has none.
	CarbonIntensityByNode map[string]*big.Rat
	// CarbonIntensityByNodeLabel gives nodes the intensity of their value
	// of one node label (such as their region); nil when the book has
	// none. The ledger records each node's value over time (serve --quota).
	CarbonIntensityByNodeLabel *LabelIntensities
}

// LabelIntensities are carbon intensities (gCO2e per kWh) by the value of
// the node label Label.
type LabelIntensities struct {
	Label       string
	Intensities map[string]*big.Rat
}

// IntensityFor is the carbon intensity of a node, without its labels.
func (e *Energy) IntensityFor(node string) *big.Rat {
	return e.IntensityOf(node, "", false)
}

// IntensityOf is the carbon intensity of a node whose value of the book's
// node label is value (labelled false: it has none recorded): the node's
// own figure, else its label value's, else CarbonIntensity.
func (e *Energy) IntensityOf(node, value string, labelled bool) *big.Rat {
	if x, ok := e.CarbonIntensityByNode[node]; ok {
		return x
	}
	if l := e.CarbonIntensityByNodeLabel; l != nil && labelled {
		if x, ok := l.Intensities[value]; ok {
			return x
		}
	}
	return e.CarbonIntensity
}

// PerNode reports whether nodes may differ in carbon intensity: the
// report then prices the ledger's energy node by node.
func (e *Energy) PerNode() bool {
	return e != nil && (len(e.CarbonIntensityByNode) > 0 || e.CarbonIntensityByNodeLabel != nil)
}

// maxIntensityNodes bounds carbonIntensityByNode: a fleet's nodes.
const maxIntensityNodes = 10_000

// maxIntensityValues bounds carbonIntensityByNodeLabel's intensities: a
// provider's regions or a fleet's zones number tens to hundreds.
const maxIntensityValues = 10_000

// maxCarbonIntensity bounds gCO2e per kWh: the dirtiest grids emit about
// 1,000; ten times that is surely a unit mistake.
const maxCarbonIntensity = 10_000

// Fields of the energy section.
const (
	fieldEnergy               = "energy"
	fieldEnergyRate           = "rate"
	fieldCarbonIntensity      = "carbonIntensity"
	fieldIntensityByNode      = "carbonIntensityByNode"
	fieldIntensityByNodeLabel = "carbonIntensityByNodeLabel"
	fieldLabelLabel           = "label"
	fieldLabelIntensities     = "intensities"
)

var (
	energyFields      = []string{fieldEnergyRate, fieldCarbonIntensity, fieldIntensityByNode, fieldIntensityByNodeLabel}
	labelEnergyFields = []string{fieldLabelLabel, fieldLabelIntensities}
)

// Units a figure may carry after its number, and what they multiply the
// number by to make the canonical unit (money per kWh; gCO2e per kWh).
var (
	rateUnits      = map[string]*big.Rat{"": big.NewRat(1, 1), "/kWh": big.NewRat(1, 1), "/MWh": big.NewRat(1, 1000)}
	intensityUnits = map[string]*big.Rat{"": big.NewRat(1, 1), "gCO2e/kWh": big.NewRat(1, 1), "kgCO2e/kWh": big.NewRat(1000, 1),
		"kgCO2e/MWh": big.NewRat(1, 1), "tCO2e/MWh": big.NewRat(1000, 1)}
)

// energy reads the energy section: a mapping with rate and
// carbonIntensity, each optional.
func (p *parser) energy(e *entry) *Energy {
	if e == nil || e.value.Tag == "!!null" {
		return nil
	}
	out := &Energy{}
	seen, ok := p.section(e, fieldEnergy, energyFields, func(k, v *yaml.Node, field string) {
		switch k.Value {
		case fieldEnergyRate:
			if x, ok := p.unitFigure(v, field, "a price per kWh such as 0.15 or 150/MWh", rateUnits, nil); ok {
				// Exact: a decimal, or a decimal over 1000 (/MWh).
				out.Rate = &Rate{r: x, decimals: 2 * maxRateText}
			}
		case fieldCarbonIntensity:
			if v.Kind == yaml.MappingNode {
				// A mapping here is probably figures per region: refuse
				// rather than ignore, and name the fields that take them.
				p.addf(v, field, "one figure for the nodes without their own (such as 350); figures per node go in %s, per node label such as a region in %s", fieldIntensityByNode, fieldIntensityByNodeLabel)
				return
			}
			if x, ok := p.intensity(v, field); ok {
				out.CarbonIntensity = x
			}
		case fieldIntensityByNode:
			out.CarbonIntensityByNode = p.intensityByNode(v, field)
		case fieldIntensityByNodeLabel:
			out.CarbonIntensityByNodeLabel = p.intensityByNodeLabel(&entry{key: k, value: v}, field)
		}
	})
	if !ok {
		return nil
	}
	if first, ok := seen[fieldIntensityByNode]; ok && seen[fieldCarbonIntensity] == 0 {
		p.addf(e.value, fieldEnergy+"."+fieldCarbonIntensity, "missing: %s (line %d) needs carbonIntensity for the nodes it does not list", fieldIntensityByNode, first)
	}
	if first, ok := seen[fieldIntensityByNodeLabel]; ok && seen[fieldCarbonIntensity] == 0 {
		p.addf(e.value, fieldEnergy+"."+fieldCarbonIntensity, "missing: %s (line %d) needs carbonIntensity for the nodes without the label or with a value it does not list", fieldIntensityByNodeLabel, first)
	}
	if out.Rate == nil && out.CarbonIntensity == nil {
		return nil
	}
	return out
}

func (p *parser) intensity(v *yaml.Node, field string) (*big.Rat, bool) {
	bound := big.NewRat(maxCarbonIntensity, 1)
	return p.unitFigure(v, field, "grams of CO2e per kWh such as 350 or 0.35 kgCO2e/kWh", intensityUnits, bound)
}

// intensityByNode reads a mapping of node name to carbon intensity.
func (p *parser) intensityByNode(v *yaml.Node, field string) map[string]*big.Rat {
	out := map[string]*big.Rat{}
	if v.Tag == "!!null" {
		return out
	}
	p.intensities(v, field, out, intensityKeys{what: "node", key: "node name", example: "gpu-node-7", max: maxIntensityNodes,
		valid: func(s string) bool { return strings.TrimSpace(s) != "" && len(s) <= 253 },
		bad:   "node names must be non-empty text of at most 253 characters"})
	return out
}

// intensityKeys describe the keys of a mapping to carbon intensities.
type intensityKeys struct {
	what, key, example string // "node", "node name", "gpu-node-7"
	max                int
	valid              func(string) bool
	bad                string // the problem of a key valid refuses (%q: the key)
}

// intensities reads a mapping of keys to carbon intensities into out;
// false when there was a problem.
func (p *parser) intensities(v *yaml.Node, field string, out map[string]*big.Rat, keys intensityKeys) bool {
	if v.Kind != yaml.MappingNode {
		p.addf(v, field, "want a mapping of %s to grams of CO2e per kWh (such as %s: 30), not a %s", keys.key, keys.example, kindName(v))
		return false
	}
	if len(v.Content)/2 > keys.max {
		p.addf(v, field, "%d %ss, more than %d", len(v.Content)/2, keys.what, keys.max)
		return false
	}
	good := true
	lines := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, x := resolve(v.Content[i]), resolve(v.Content[i+1])
		if k.Kind != yaml.ScalarNode || !keys.valid(k.Value) {
			msg := keys.bad
			if strings.Contains(msg, "%q") {
				msg = fmt.Sprintf(msg, truncate(k.Value))
			}
			p.addf(k, field, "%s", msg)
			good = false
			continue
		}
		f := field + "." + k.Value
		if first, dup := lines[k.Value]; dup {
			p.addf(k, f, "%s given twice (first on line %d)", keys.what, first)
			good = false
			continue
		}
		lines[k.Value] = k.Line
		if g, ok := p.intensity(x, f); ok {
			out[k.Value] = g
		} else {
			good = false
		}
	}
	return good
}

// intensityByNodeLabel reads {label: KEY, intensities: {VALUE: FIGURE}}:
// both required.
func (p *parser) intensityByNodeLabel(e *entry, field string) *LabelIntensities {
	out := &LabelIntensities{Intensities: map[string]*big.Rat{}}
	good := true
	seen, ok := p.section(e, field, labelEnergyFields, func(k, v *yaml.Node, f string) {
		switch k.Value {
		case fieldLabelLabel:
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || !isLabelKey(v.Value) {
				p.addf(v, f, "want a Kubernetes node label key such as topology.kubernetes.io/region")
				good = false
				return
			}
			out.Label = v.Value
		case fieldLabelIntensities:
			good = p.intensities(v, f, out.Intensities, intensityKeys{what: "label value", key: "label value", example: "eu-north-1", max: maxIntensityValues,
				valid: labelName.MatchString,
				bad:   "%q is not a Kubernetes label value (letters, digits, '-', '_' and '.', at most 63)"}) && good
		}
	})
	if !ok {
		return nil
	}
	for _, need := range labelEnergyFields {
		if _, ok := seen[need]; !ok {
			p.addf(e.value, field+"."+need, "missing")
			good = false
		}
	}
	if !good {
		return nil
	}
	return out
}

// unitFigure reads "NUMBER" or "NUMBER UNIT" (unit one of units, space
// optional) into the canonical unit, exactly. A bound, when given, is the
// largest canonical value accepted.
func (p *parser) unitFigure(v *yaml.Node, field, want string, units map[string]*big.Rat, bound *big.Rat) (*big.Rat, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.addf(v, field, "want %s", want)
		return nil, false
	}
	switch v.Tag {
	case "!!int", "!!float", "!!str", "":
	default:
		p.addf(v, field, "want %s, not a %s", want, strings.TrimPrefix(v.Tag, "!!"))
		return nil, false
	}
	s := strings.TrimSpace(v.Value)
	n := 0
	for n < len(s) && (s[n] == '-' || s[n] == '.' || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	num, unit := s[:n], strings.TrimSpace(s[n:])
	if num == "" || unit != "" && (unit[0] == 'e' || unit[0] == 'E') && len(unit) > 1 && strings.ContainsAny(unit[1:2], "+-0123456789") {
		p.addf(v, field, "%q is not a plain decimal number: want %s", truncate(s), want)
		return nil, false
	}
	mul, ok := units[unit]
	if !ok {
		names := make([]string, 0, len(units))
		for u := range units {
			if u != "" {
				names = append(names, u)
			}
		}
		slices.Sort(names)
		hint := ""
		for _, u := range names {
			if strings.EqualFold(u, unit) || strings.EqualFold(strings.ReplaceAll(u, "CO2e", ""), unit) {
				hint = fmt.Sprintf(" (did you mean %s?)", u)
				break
			}
		}
		p.addf(v, field, "%q: unknown unit %q%s: want a plain number or one of %s", truncate(s), truncate(unit), hint, strings.Join(names, ", "))
		return nil, false
	}
	if strings.HasPrefix(num, "-") {
		p.addf(v, field, "%q is negative: want %s", truncate(s), want)
		return nil, false
	}
	r, err := ParseRate(num)
	if err != nil {
		p.addf(v, field, "%v: want %s", err, want)
		return nil, false
	}
	x := new(big.Rat).Mul(r.Rat(), mul)
	if bound != nil && x.Cmp(bound) > 0 {
		p.addf(v, field, "%q is more than %s gCO2e/kWh: check the unit", truncate(s), bound.FloatString(0))
		return nil, false
	}
	return x, true
}

// suggestFrom names the known field a misspelt one probably meant.
func suggestFrom(s string, known []string) string {
	for _, f := range known {
		if strings.EqualFold(f, s) {
			return fmt.Sprintf(" (did you mean %s?)", f)
		}
	}
	return fmt.Sprintf(" (want %s)", strings.Join(known, ", "))
}

// section reads a mapping field of the book: each known key once, handed
// to fn with its value and its dotted field name; unknown and repeated
// keys are problems. seen maps each key read to its line; ok is false
// when the field is not a mapping.
func (p *parser) section(e *entry, name string, known []string, fn func(k, v *yaml.Node, field string)) (seen map[string]int, ok bool) {
	if e.value.Kind != yaml.MappingNode {
		p.addf(e.value, name, "want a mapping of %s, not a %s", strings.Join(known, ", "), kindName(e.value))
		return nil, false
	}
	seen = map[string]int{}
	for i := 0; i+1 < len(e.value.Content); i += 2 {
		k, v := resolve(e.value.Content[i]), resolve(e.value.Content[i+1])
		field := name + "." + k.Value
		if k.Kind != yaml.ScalarNode || !slices.Contains(known, k.Value) {
			p.addf(k, field, "unknown field%s", suggestFrom(k.Value, known))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.addf(k, field, "given twice (first on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		fn(k, v, field)
	}
	return seen, true
}
