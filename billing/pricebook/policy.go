package pricebook

import (
	"math/big"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// memoryWeight reads memoryWeight: a plain decimal in [0, 1], read from
// its text like a rate so 0.3 is exactly 3/10.
func (p *parser) memoryWeight(e *entry) *big.Rat {
	if e == nil {
		return nil
	}
	s, ok := p.scalar(e, fieldMemoryWeight)
	if !ok {
		return nil
	}
	if e.value.Tag != "!!int" && e.value.Tag != "!!float" && e.value.Tag != "!!str" {
		p.addf(e.value, fieldMemoryWeight, "want a number from 0 to 1 such as 0.3, not a %s", strings.TrimPrefix(e.value.Tag, "!!"))
		return nil
	}
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		// Checked before the syntax so -0.1 is named for what it is.
		if _, err := ParseRate(s[1:]); err == nil {
			p.addf(e.value, fieldMemoryWeight, "%q is outside 0..1: the share of a charge that follows memory", s)
			return nil
		}
	}
	r, err := ParseRate(s)
	if err != nil {
		p.addf(e.value, fieldMemoryWeight, "%q is not a number from 0 to 1 (want plain notation like 0.3)", truncate(s))
		return nil
	}
	w := r.Rat()
	if w.Cmp(big.NewRat(1, 1)) > 0 {
		p.addf(e.value, fieldMemoryWeight, "%q is outside 0..1: the share of a charge that follows memory", s)
		return nil
	}
	return w
}

// memoryMiB reads the device memory of GPU models: positive whole MiB.
func (p *parser) memoryMiB(e *entry) map[string]int64 {
	return byModel(p, e, fieldMemoryMiB, "its memory in MiB (such as A100-SXM4-80GB: 81920)", "given", p.mib)
}

func (p *parser) mib(v *yaml.Node, field string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!str") || err != nil || n <= 0 || n > maxMemoryMiB {
		p.addf(v, field, "%q: want the device's memory in whole MiB, 1 to %d (such as 81920)", truncate(v.Value), maxMemoryMiB)
		return 0, false
	}
	return n, true
}

// policyFields checks the fields that belong to one policy: rates and
// defaultRate price allocation and usage, memoryWeight only usage, and
// slotRates only flat. A field the policy ignores is an error, so a book
// never looks as if it charged something it does not.
func (p *parser) policyFields(root *yaml.Node, b *Book, fields map[string]*entry) {
	notFor := func(field, why string) {
		if e := fields[field]; e != nil {
			p.addf(e.key, field, "not used by policy %s: %s", b.Policy, why)
		}
	}
	if b.Policy != PolicyUsage && b.Policy != "" {
		notFor(fieldMemoryWeight, "memory-weighted billing is policy usage with memoryWeight (docs/report.md, Billing policies)")
	}
	if b.Policy == PolicyFlat {
		notFor(fieldRates, "it prices GPU slots per month with slotRates")
		notFor(fieldDefaultRate, "every model seen must have a slotRates entry")
		switch e := fields[fieldSlotRates]; {
		case e == nil:
			p.addf(root, fieldSlotRates, "missing: policy flat needs the price per GPU slot per month of each GPU model (such as A100-SXM4-80GB: 800.00)")
		case e.value.Tag == "!!null" || e.value.Kind == yaml.MappingNode && len(e.value.Content) == 0:
			p.addf(e.value, fieldSlotRates, "empty: policy flat needs the price per GPU slot per month of each GPU model")
		}
		return
	}
	notFor(fieldSlotRates, "slot prices are for policy flat")
	if fields[fieldDefaultRate] == nil {
		p.addf(root, fieldDefaultRate, "missing: the rate for GPU models the book does not list")
	}
}
