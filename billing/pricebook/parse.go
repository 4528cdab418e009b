package pricebook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // invoice periods must not depend on the host's zoneinfo

	"go.yaml.in/yaml/v3"

	"github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/tenancy"
)

// maxFileSize bounds a price book: a few hundred models fit in a few KiB.
const maxFileSize = 1 << 20

// maxProblems bounds how many problems one error lists.
const maxProblems = 20

// Load reads and validates the price book at path.
func Load(path string) (*Book, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read price book: %w", err)
	}
	if st.Size() > maxFileSize {
		return nil, fmt.Errorf("price book %s: %d bytes, more than %d", path, st.Size(), maxFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read price book: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a price book read from the file called name. The error
// lists every problem found, each as "name:line: field: what is wrong".
func Parse(name string, data []byte) (*Book, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("price book %s: %d bytes, more than %d", name, len(data), maxFileSize)
	}
	p := &parser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("price book %s: %w", name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("price book %s: empty file (want currency, policy, rates and defaultRate)", name)
	}
	b := p.book(doc.Content[0])
	if err := p.err(); err != nil {
		return nil, err
	}
	b.Raw = bytes.Clone(data)
	sum := sha256.Sum256(data)
	b.SHA256 = hex.EncodeToString(sum[:])
	return b, nil
}

// parser collects problems with their positions.
type parser struct {
	file     string
	problems []string
}

func (p *parser) addf(n *yaml.Node, field, format string, args ...any) {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	p.problems = append(p.problems, fmt.Sprintf("%s:%d: %s: %s", p.file, line, field, fmt.Sprintf(format, args...)))
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	ps := p.problems
	if len(ps) > maxProblems {
		ps = append(ps[:maxProblems:maxProblems], fmt.Sprintf("... and %d more problems", len(p.problems)-maxProblems))
	}
	return fmt.Errorf("invalid price book %s:\n  %s", p.file, strings.Join(ps, "\n  "))
}

// Fields of the price book, as written in YAML.
const (
	fieldCurrency     = "currency"
	fieldTimezone     = "timezone"
	fieldTeamLabel    = "teamLabel"
	fieldPolicy       = "policy"
	fieldIdle         = "idle"
	fieldRates        = "rates"
	fieldDefaultRate  = "defaultRate"
	fieldMemoryWeight = "memoryWeight"
	fieldMemoryMiB    = "memoryMiB"
	fieldSlotRates    = "slotRates"
)

var knownFields = []string{fieldCurrency, fieldTimezone, fieldTeamLabel, fieldPolicy, fieldIdle, fieldRates, fieldDefaultRate,
	fieldMemoryWeight, fieldMemoryMiB, fieldSlotRates, fieldEnergy, fieldQuota, fieldEffectiveFrom, fieldExample}

func (p *parser) book(root *yaml.Node) *Book {
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		p.addf(root, "(top level)", "want a mapping of %s", strings.Join(knownFields, ", "))
		return nil
	}
	fields := p.fields(root)
	b := &Book{Source: p.file, Rates: map[string]Rate{}}
	b.Currency = p.currency(root, fields[fieldCurrency])
	b.Timezone, b.Location = p.timezone(fields[fieldTimezone])
	b.TeamLabel = p.teamLabel(fields[fieldTeamLabel])
	b.Policy = Policy(p.enum(root, fields[fieldPolicy], fieldPolicy, "", string(PolicyAllocation), string(PolicyUsage), string(PolicyFlat), string(PolicyQuota)))
	b.Idle = Idle(p.enum(root, fields[fieldIdle], fieldIdle, string(DefaultIdle), string(IdlePlatform), string(IdleShared)))
	b.Rates = p.rates(fields[fieldRates], fieldRates, "rate per GPU-hour")
	b.SlotRates = p.rates(fields[fieldSlotRates], fieldSlotRates, "price per GPU slot per month")
	b.MemoryWeight = p.memoryWeight(fields[fieldMemoryWeight])
	b.MemoryMiB = p.memoryMiB(fields[fieldMemoryMiB])
	b.Energy = p.energy(fields[fieldEnergy])
	b.Quota = p.quotaSection(fields[fieldQuota])
	b.EffectiveFrom = p.effectiveFrom(fields[fieldEffectiveFrom], b.Location)
	b.Example = p.example(fields[fieldExample])
	p.policyFields(root, b, fields)
	p.quotaPolicyFields(root, b, fields)
	if v := fields[fieldDefaultRate]; v != nil {
		b.DefaultRate, _ = p.rate(v.value, fieldDefaultRate)
	}
	return b
}

// entry is one key/value pair of a mapping.
type entry struct{ key, value *yaml.Node }

// fields indexes the top-level mapping, reporting unknown and repeated keys.
func (p *parser) fields(root *yaml.Node) map[string]*entry {
	out := map[string]*entry{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolve(root.Content[i]), resolve(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.addf(k, "(top level)", "keys must be plain field names")
			continue
		}
		if !slices.Contains(knownFields, k.Value) {
			p.addf(k, k.Value, "unknown field%s", suggest(k.Value))
			continue
		}
		if prev, ok := out[k.Value]; ok {
			p.addf(k, k.Value, "given twice (first on line %d)", prev.key.Line)
			continue
		}
		out[k.Value] = &entry{key: k, value: v}
	}
	return out
}

// scalar returns a field's text, reporting values that are not scalars.
func (p *parser) scalar(e *entry, field string) (string, bool) {
	if e.value.Kind != yaml.ScalarNode {
		p.addf(e.value, field, "want a single value, not a %s", kindName(e.value))
		return "", false
	}
	if e.value.Tag == "!!null" {
		p.addf(e.value, field, "empty")
		return "", false
	}
	return e.value.Value, true
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func (p *parser) currency(root *yaml.Node, e *entry) Currency {
	if e == nil {
		p.addf(root, fieldCurrency, "missing: want an ISO 4217 code such as USD or EUR")
		return Currency{}
	}
	s, ok := p.scalar(e, fieldCurrency)
	if !ok {
		return Currency{}
	}
	if !currencyCode.MatchString(s) {
		hint := ""
		if up := strings.ToUpper(s); currencyCode.MatchString(up) {
			if _, known := minorUnits[up]; known {
				hint = fmt.Sprintf(" (did you mean %s?)", up)
			}
		}
		p.addf(e.value, fieldCurrency, "%q is not an ISO 4217 code: want three capital letters such as USD%s", s, hint)
		return Currency{}
	}
	c, known := LookupCurrency(s)
	if !known {
		p.addf(e.value, fieldCurrency, "%q is not an active ISO 4217 currency with a minor unit", s)
	}
	return c
}

func (p *parser) timezone(e *entry) (string, *time.Location) {
	if e == nil {
		return DefaultTimezone, time.UTC
	}
	s, ok := p.scalar(e, fieldTimezone)
	if !ok {
		return "", nil
	}
	if s == "" || s == "Local" {
		// Local would make the bill depend on the machine that prints it.
		p.addf(e.value, fieldTimezone, "%q: want an IANA time zone such as UTC or Europe/Berlin", s)
		return "", nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		p.addf(e.value, fieldTimezone, "%q is not an IANA time zone (such as UTC or America/Los_Angeles)", s)
		return "", nil
	}
	return s, loc
}

// labelName and labelPrefix are Kubernetes label key syntax.
var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func (p *parser) teamLabel(e *entry) string {
	if e == nil {
		return tenancy.DefaultTeamLabel
	}
	s, ok := p.scalar(e, fieldTeamLabel)
	if !ok {
		return ""
	}
	if !isLabelKey(s) {
		p.addf(e.value, fieldTeamLabel, "%q is not a Kubernetes label key (such as team or example.com/team)", s)
		return ""
	}
	return s
}

// isLabelKey reports whether s is a Kubernetes label key: a name of at
// most 63 characters, optionally after a DNS-subdomain prefix and "/".
func isLabelKey(s string) bool {
	prefix, name, hasPrefix := strings.Cut(s, "/")
	if !hasPrefix {
		prefix, name = "", s
	}
	return labelName.MatchString(name) && (!hasPrefix || len(prefix) <= 253 && labelPrefix.MatchString(prefix))
}

// enum reads a field that takes one of a few words; def == "" makes it
// required.
func (p *parser) enum(root *yaml.Node, e *entry, field, def string, allowed ...string) string {
	if e == nil {
		if def == "" {
			p.addf(root, field, "missing: want %s", strings.Join(allowed, " or "))
		}
		return def
	}
	s, ok := p.scalar(e, field)
	if !ok {
		return ""
	}
	if !slices.Contains(allowed, s) {
		p.addf(e.value, field, "%q: want %s", s, strings.Join(allowed, " or "))
		return ""
	}
	return s
}

// rates reads a mapping of GPU model to price (rates, slotRates).
func (p *parser) rates(e *entry, name, what string) map[string]Rate {
	return byModel(p, e, name, what, "priced", p.rate)
}

// byModel reads a mapping of GPU model to a value that read reads
// (rates, slotRates, memoryMiB): model names normalised as the collector
// writes them, each model once.
func byModel[T any](p *parser, e *entry, name, what, verb string, read func(v *yaml.Node, field string) (T, bool)) map[string]T {
	out := map[string]T{}
	if e == nil {
		return out
	}
	if e.value.Tag == "!!null" {
		return out
	}
	if e.value.Kind != yaml.MappingNode {
		p.addf(e.value, name, "want a mapping of GPU model to %s, not a %s", what, kindName(e.value))
		return out
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(e.value.Content); i += 2 {
		k, v := resolve(e.value.Content[i]), resolve(e.value.Content[i+1])
		if k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			p.addf(k, name, "GPU model names must be non-empty text")
			continue
		}
		model := gpu.NormaliseModel(k.Value)
		field := name + "." + k.Value
		if model == "" {
			p.addf(k, field, "GPU model name %q is empty once normalised", k.Value)
			continue
		}
		if first, dup := lines[model]; dup {
			p.addf(k, field, "model %s %s twice (first on line %d)", model, verb, first)
			continue
		}
		lines[model] = k.Line
		if x, ok := read(v, field); ok {
			out[model] = x
		}
	}
	return out
}

// rate reads a rate from the YAML text as written, never through float64:
// 2.40 and "2.40" are both exactly 2.40.
func (p *parser) rate(v *yaml.Node, field string) (Rate, bool) {
	want := "a rate per GPU-hour such as 2.40"
	if strings.HasPrefix(field, fieldSlotRates+".") {
		want = "a price per GPU slot per month such as 800.00"
	}
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.addf(v, field, "want %s", want)
		return Rate{}, false
	}
	switch v.Tag {
	case "!!int", "!!float", "!!str", "":
	default:
		p.addf(v, field, "want %s, not a %s", want, strings.TrimPrefix(v.Tag, "!!"))
		return Rate{}, false
	}
	r, err := ParseRate(strings.TrimSpace(v.Value))
	if err != nil {
		p.addf(v, field, "%v", err)
		return Rate{}, false
	}
	return r, true
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{}
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

// suggest names the known field a misspelt one probably meant.
func suggest(s string) string {
	for _, f := range knownFields {
		if strings.EqualFold(f, s) || strings.EqualFold(strings.ReplaceAll(f, "_", ""), strings.ReplaceAll(s, "_", "")) {
			return fmt.Sprintf(" (did you mean %s?)", f)
		}
	}
	return fmt.Sprintf(" (want %s)", strings.Join(knownFields, ", "))
}
