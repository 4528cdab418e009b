package pricebook

import (
	"strings"
	"testing"
)

const quotaBase = "currency: USD\npolicy: quota\ndefaultRate: 2.00\n"

func TestQuotaSection(t *testing.T) {
	b, err := Parse("prices.yaml", []byte(quotaBase+"quota: {source: volcano, rate: 1.25, aboveRate: \"3.10\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Policy != PolicyQuota || b.Quota == nil || b.Quota.Source != "volcano" ||
		b.Quota.Rate.Format(2) != "1.25" || b.Quota.AboveRate.Format(2) != "3.10" {
		t.Errorf("quota book = %+v, quota %+v", b, b.Quota)
	}
}

// TestQuotaErrors: each mistake is named with its field and line.
func TestQuotaErrors(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"missing section":  {quotaBase, "prices.yaml:1: quota: missing: policy quota needs a quota section"},
		"missing rate":     {quotaBase + "quota: {source: kueue, aboveRate: 3}\n", "quota.rate: missing"},
		"missing above":    {quotaBase + "quota: {source: kueue, rate: 3}\n", "quota.aboveRate: missing"},
		"missing source":   {quotaBase + "quota: {rate: 1, aboveRate: 3}\n", "quota.source: missing"},
		"unknown source":   {quotaBase + "quota: {source: slurm, rate: 1, aboveRate: 3}\n", `quota.source: "slurm": want one of resourcequota, kueue, volcano, kai`},
		"misspelt field":   {quotaBase + "quota: {source: kai, rate: 1, abovRate: 3}\n", "quota.abovRate: unknown field"},
		"negative rate":    {quotaBase + "quota: {source: kai, rate: -1, aboveRate: 3}\n", "quota.rate:"},
		"not a mapping":    {quotaBase + "quota: kueue\n", "quota: want a mapping of source, rate, aboveRate"},
		"other policy":     {"currency: USD\npolicy: allocation\ndefaultRate: 2\nquota: {source: kai, rate: 1, aboveRate: 3}\n", "quota: not used by policy allocation"},
		"idle shared":      {quotaBase + "idle: shared\nquota: {source: kai, rate: 1, aboveRate: 3}\n", "idle: shared: not with policy quota"},
		"energy":           {quotaBase + "energy: {rate: 0.1}\nquota: {source: kai, rate: 1, aboveRate: 3}\n", "energy: not with policy quota"},
		"no default rate":  {"currency: USD\npolicy: quota\nquota: {source: kai, rate: 1, aboveRate: 3}\n", "defaultRate: missing"},
		"memory weighting": {quotaBase + "memoryWeight: 0.3\nquota: {source: kai, rate: 1, aboveRate: 3}\n", "memoryWeight: not used by policy quota"},
	} {
		_, err := Parse("prices.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, c.want)
		}
	}
}
