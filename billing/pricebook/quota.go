package pricebook

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuledger/gpuledger/quota"
)

// PolicyQuota charges each team its quota: the quota-hours of one source
// at Quota.Rate whether held or not, plus the GPU-hours it held above its
// quota, hour by hour, at Quota.AboveRate. What the GPUs cost at rates
// and defaultRate and the teams do not pay (or pay beyond it) is the
// platform line, so the file still adds up to capacity x rate.
const PolicyQuota Policy = "quota"

// Quota is the price book's quota section (policy quota only).
type Quota struct {
	// Source is the quota source billed: resourcequota, kueue, volcano or
	// kai (a team may have quota from several; one is its bill).
	Source string
	// Rate is the price per quota GPU-hour; AboveRate per GPU-hour held
	// above quota (and all a team without quota holds).
	Rate, AboveRate Rate
}

// Fields of the quota section.
const (
	fieldQuota          = "quota"
	fieldQuotaSource    = "source"
	fieldQuotaRate      = "rate"
	fieldQuotaAboveRate = "aboveRate"
)

var quotaFields = []string{fieldQuotaSource, fieldQuotaRate, fieldQuotaAboveRate}

// quotaSection reads the quota section: source, rate and aboveRate, all
// required.
func (p *parser) quotaSection(e *entry) *Quota {
	if e == nil {
		return nil
	}
	out := &Quota{}
	seen, ok := p.section(e, fieldQuota, quotaFields, func(k, v *yaml.Node, field string) {
		switch k.Value {
		case fieldQuotaSource:
			if v.Kind != yaml.ScalarNode || !quota.ValidSource(v.Value) {
				p.addf(v, field, "%q: want one of %s", truncate(v.Value), strings.Join(quota.Sources(), ", "))
				return
			}
			out.Source = v.Value
		case fieldQuotaRate:
			out.Rate, _ = p.rate(v, field)
		case fieldQuotaAboveRate:
			out.AboveRate, _ = p.rate(v, field)
		}
	})
	if !ok {
		return nil
	}
	for _, f := range quotaFields {
		if seen[f] == 0 {
			p.addf(e.value, fieldQuota+"."+f, "missing: policy quota needs %s (source: the quota billed; rate: per quota GPU-hour; aboveRate: per GPU-hour held above quota)", f)
		}
	}
	return out
}

// quotaPolicyFields checks what goes with policy quota: the quota section
// (only with it), idle platform (the platform line is what the quota
// leaves uncovered, so there is no idle to share) and no energy section
// (energy is split along charge lines, which this policy does not have).
func (p *parser) quotaPolicyFields(root *yaml.Node, b *Book, fields map[string]*entry) {
	e := fields[fieldQuota]
	if b.Policy != PolicyQuota {
		if e != nil {
			p.addf(e.key, fieldQuota, "not used by policy %s: quota prices are for policy quota", b.Policy)
		}
		return
	}
	if e == nil {
		p.addf(root, fieldQuota, "missing: policy quota needs a quota section with source, rate and aboveRate")
	}
	if b.Idle == IdleShared {
		p.addf(fields[fieldIdle].value, fieldIdle, "shared: not with policy quota, whose platform line is the capacity cost the quotas leave uncovered")
	}
	if f := fields[fieldEnergy]; f != nil {
		p.addf(f.key, fieldEnergy, "not with policy quota: energy cost and CO2e are split along charge lines, which policy quota replaces by quota lines")
	}
}
