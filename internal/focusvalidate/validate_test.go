package focusvalidate

import (
	"slices"
	"strings"
	"testing"
)

// validRows is a small FOCUS file written by hand from the specification:
// a GPU pool's charge split into an allocated part (60 %) and its
// unallocated part (40 %), and a rounding adjustment. 10 GPU-hours at
// 2.50 = 25.00; 6.666667 h x 2.50 = 16.6666675 written as 16.67.
func validRows() []map[string]string {
	common := map[string]string{
		"BillingAccountId": "acct", "BillingAccountName": "Account", "BillingCurrency": "USD",
		"BillingPeriodStart": "2026-03-01T00:00:00Z", "BillingPeriodEnd": "2026-04-01T00:00:00Z",
		"ChargePeriodStart": "2026-03-01T00:00:00Z", "ChargePeriodEnd": "2026-04-01T00:00:00Z",
		"ChargeClass": "", "ChargeDescription": "GPU time", "HostProviderName": "Host", "InvoiceIssuerName": "Issuer",
		"ProviderName": "Provider", "PublisherName": "Provider", "InvoiceId": "acct/2026-03",
		"ServiceProviderName": "Provider", "ServiceCategory": "Compute", "ServiceSubcategory": "Containers", "ServiceName": "GPU",
		"x_SharingMode": "mig",
	}
	usage := func(cost, qty, ratio string) map[string]string {
		r := clone(common)
		for k, v := range map[string]string{
			"ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "PricingCategory": "Standard",
			"BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "ContractedCost": cost,
			"ListUnitPrice": "2.50", "ContractedUnitPrice": "2.50", "PricingQuantity": qty, "PricingUnit": "GPU-Hours",
			"SkuPriceDetails": `{"GpuCount":1,"x_GpuModel":"A100"}`, "SubAccountId": "pool", "SubAccountName": "Pool",
			"ConsumedQuantity": qty, "ConsumedUnit": "GPU-Hours", "SkuId": "A100", "SkuPriceId": "A100/USD/2.50", "SkuMeter": "GPU-Hours",
			"ResourceId": "pool/A100", "ResourceName": "A100 GPUs", "ResourceType": "GPU Pool", "Tags": `{"model":"A100"}`,
			"AllocatedMethodId":      "m1",
			"AllocatedMethodDetails": `{"Elements":[{"AllocatedRatio":` + ratio + `,"UsageUnit":"GPU-Hours","UsageQuantity":` + qty + `}]}`,
		} {
			r[k] = v
		}
		return r
	}
	a := usage("16.67", "6.666667", "0.666666666667")
	a["AllocatedResourceId"], a["AllocatedResourceName"], a["AllocatedTags"] = "ns-a", "ns-a", `{"team":"ml","done":true}`
	a["x_TeamName"] = "ml"
	b := usage("8.33", "3.333333", "0.333333333333")
	// Custom columns may differ between allocated charges.
	b["x_SharingMode"] = "time-slicing"
	adj := clone(common)
	for k, v := range map[string]string{"ChargeCategory": "Adjustment", "ChargeFrequency": "One-Time", "BilledCost": "-0.01",
		"EffectiveCost": "-0.01", "ListCost": "-0.01", "ContractedCost": "-0.01"} {
		adj[k] = v
	}
	return []map[string]string{a, b, adj}
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// table turns maps into a header and rows; a key absent from every row is
// no column at all.
func table(rows []map[string]string) ([]string, [][]string) {
	var header []string
	for _, r := range rows {
		for k := range r {
			if !slices.Contains(header, k) {
				header = append(header, k)
			}
		}
	}
	slices.Sort(header)
	var out [][]string
	for _, r := range rows {
		rec := make([]string, len(header))
		for i, h := range header {
			rec[i] = r[h]
		}
		out = append(out, rec)
	}
	return header, out
}

func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

func TestValidRowsPass(t *testing.T) {
	h, rows := table(validRows())
	if vs := Check(h, rows); len(vs) > 0 {
		t.Fatalf("hand-written valid file: %v", vs)
	}
	rows14, v := validRows14()
	h14, recs14 := table(rows14)
	if vs := CheckVersion(h14, recs14, v); len(vs) > 0 {
		t.Fatalf("hand-written valid 1.4 file: %v", vs)
	}
}

// validRows14 is validRows as FOCUS 1.4: without ProviderName and
// PublisherName, which 1.4 removed.
func validRows14() ([]map[string]string, string) {
	rows := validRows()
	for _, r := range rows {
		delete(r, "ProviderName")
		delete(r, "PublisherName")
	}
	return rows, Version14
}

// TestValidatorRejectsEachBrokenRule breaks one rule at a time in the
// valid file and expects exactly that rule to be reported.
func TestValidatorRejectsEachBrokenRule(t *testing.T) {
	cases := []struct {
		name  string
		row   int // 0: the allocated charge, 1: the unallocated part, 2: the adjustment
		edit  map[string]string
		drop  string // a column to remove from every row
		rule  string
		extra bool // other rules may fire too
		v14   bool // the 1.4 file and rules
		// split: the edit goes to both allocated charges (rows 0 and 1),
		// which must repeat their origin charge's dimensions.
		split bool
	}{
		{name: "1.3 without ProviderName", drop: "ProviderName", rule: "ProviderName.Present"},
		{name: "1.3 without PublisherName", drop: "PublisherName", rule: "PublisherName.Present"},
		{name: "1.3 ProviderName null", row: 2, edit: map[string]string{"ProviderName": ""}, rule: "ProviderName.NotNull"},
		{name: "1.3 PublisherName null", split: true, edit: map[string]string{"PublisherName": ""}, rule: "PublisherName.NotNull"},
		{name: "1.4 with ProviderName", v14: true, edit: map[string]string{"ProviderName": "Provider"}, rule: "ProviderName.CustomColumnPrefix"},
		{name: "1.4 with PublisherName", v14: true, edit: map[string]string{"PublisherName": "Provider"}, rule: "PublisherName.CustomColumnPrefix"},
		{name: "1.4 without HostProviderName", v14: true, drop: "HostProviderName", rule: "HostProviderName.Present"},
		{name: "HostProviderName null on usage", split: true, row: 1, edit: map[string]string{"HostProviderName": ""}, rule: "HostProviderName.NotNull"},
		{name: "1.4 HostProviderName null on usage", split: true, v14: true, row: 1, edit: map[string]string{"HostProviderName": ""}, rule: "HostProviderName.NotNull"},
		{name: "SkuPriceId without SkuPriceDetails", drop: "SkuPriceDetails", rule: "SkuPriceDetails.Present"},
		{name: "SkuPriceDetails not key-value", edit: map[string]string{"SkuPriceDetails": `{"GpuModels":["A100"]}`}, rule: "SkuPriceDetails.KeyValueFormat", extra: true},
		{name: "SkuPriceDetails key not PascalCase", edit: map[string]string{"SkuPriceDetails": `{"gpu_model":"A100"}`}, rule: "SkuPriceDetails.KeyFormat", extra: true},
		{name: "SkuPriceDetails differ for one SkuPriceId", row: 1, edit: map[string]string{"SkuPriceDetails": `{"GpuCount":1,"x_GpuModel":"H100"}`}, rule: "SkuPriceDetails.SharedBySkuPriceId", extra: true},
		{name: "SkuPriceDetails without SkuPriceId", row: 2, edit: map[string]string{"SkuPriceDetails": `{"GpuCount":1}`}, rule: "SkuPriceDetails.NullWithSkuPriceId"},
		{name: "allocated charge with another SubAccountId", row: 1, edit: map[string]string{"SubAccountId": "ml", "SubAccountName": "ml"}, rule: "SubAccountId.MatchesOriginCharge", extra: true},
		{name: "allocated charge with another SubAccountName", row: 1, edit: map[string]string{"SubAccountName": "ml"}, rule: "SubAccountName.MatchesOriginCharge"},
		{name: "allocated charge with another ChargeDescription", row: 1, edit: map[string]string{"ChargeDescription": "GPU time of team ml"}, rule: "ChargeDescription.MatchesOriginCharge"},
		{name: "allocated charge with another ChargeFrequency", row: 1, edit: map[string]string{"ChargeFrequency": "Recurring"}, rule: "ChargeFrequency.MatchesOriginCharge"},
		{name: "allocated charge with another PricingCategory", row: 1, edit: map[string]string{"PricingCategory": "Dynamic"}, rule: "PricingCategory.MatchesOriginCharge"},
		{name: "allocated charge with another SkuMeter", row: 1, edit: map[string]string{"SkuMeter": "Used GPU-Hours"}, rule: "SkuMeter.MatchesOriginCharge"},
		{name: "allocated charge with another PricingUnit", row: 1, edit: map[string]string{"PricingUnit": "GPU-Seconds"}, rule: "PricingUnit.MatchesOriginCharge"},
		{name: "allocated charge with another ConsumedUnit", row: 1, edit: map[string]string{"ConsumedUnit": "GPU-Seconds"}, rule: "ConsumedUnit.MatchesOriginCharge"},
		{name: "allocated charge with another ServiceSubcategory", row: 1, edit: map[string]string{"ServiceSubcategory": "Virtual Machines"}, rule: "ServiceSubcategory.MatchesOriginCharge"},
		{name: "allocated charge with another InvoiceId", row: 1, edit: map[string]string{"InvoiceId": "acct/2026-04"}, rule: "InvoiceId.MatchesOriginCharge"},
		{name: "1.4 allocated charge with another ChargeDescription", v14: true, row: 1, edit: map[string]string{"ChargeDescription": "GPU time of team ml"}, rule: "ChargeDescription.MatchesOriginCharge"},
		{name: "mandatory column missing", drop: "BilledCost", rule: "BilledCost.Present", extra: true},
		{name: "column a rule depends on missing", drop: "ConsumedUnit", rule: "ConsumedUnit.Present"},
		{name: "custom column without x_", edit: map[string]string{"SharingMode": "mig"}, rule: "SharingMode.CustomColumnPrefix"},
		{name: "custom column not PascalCase", edit: map[string]string{"x_sharing_mode": "mig"}, rule: "x_sharing_mode.CustomColumnPrefix"},
		{name: "BilledCost null", edit: map[string]string{"BilledCost": ""}, rule: "BilledCost.NotNull", extra: true},
		{name: "BillingCurrency null", edit: map[string]string{"BillingCurrency": ""}, rule: "BillingCurrency.NotNull", extra: true},
		{name: "ServiceProviderName null", split: true, edit: map[string]string{"ServiceProviderName": ""}, rule: "ServiceProviderName.NotNull"},
		{name: "string of spaces", split: true, edit: map[string]string{"BillingAccountId": "  "}, rule: "BillingAccountId.StringHandling"},
		{name: "cost with a currency symbol", edit: map[string]string{"EffectiveCost": "$16.67"}, rule: "EffectiveCost.NumericFormat"},
		{name: "cost with a comma", row: 2, edit: map[string]string{"ListCost": "1,000.00"}, rule: "ListCost.NumericFormat"},
		{name: "positive sign", row: 2, edit: map[string]string{"ContractedCost": "+0.01"}, rule: "ContractedCost.NumericFormat", extra: true},
		{name: "exponent with a plus", edit: map[string]string{"ConsumedQuantity": "6.666667E+0"}, rule: "ConsumedQuantity.NumericFormat"},
		{name: "date without Z", edit: map[string]string{"ChargePeriodStart": "2026-03-01T00:00:00-08:00"}, rule: "ChargePeriodStart.DateTimeFormat", extra: true},
		{name: "date only", row: 2, edit: map[string]string{"BillingPeriodStart": "2026-03-01"}, rule: "BillingPeriodStart.DateTimeFormat"},
		{name: "fractional seconds", edit: map[string]string{"ChargePeriodEnd": "2026-04-01T00:00:00.5Z"}, rule: "ChargePeriodEnd.DateTimeFormat", extra: true},
		{name: "currency not ISO 4217", edit: map[string]string{"BillingCurrency": "usd"}, rule: "BillingCurrency.CurrencyFormat", extra: true},
		{name: "tags not an object", edit: map[string]string{"Tags": `["a"]`}, rule: "Tags.KeyValueFormat", extra: true},
		{name: "tags with a nested value", edit: map[string]string{"AllocatedTags": `{"team":{"name":"ml"}}`}, rule: "AllocatedTags.KeyValueFormat"},
		{name: "tags with a duplicate key", edit: map[string]string{"Tags": `{"model":"A100","model":"H100"}`}, rule: "Tags.KeyValueFormat", extra: true},
		{name: "ChargeCategory not allowed", edit: map[string]string{"ChargeCategory": "GPU"}, rule: "ChargeCategory.AllowedValues", extra: true},
		{name: "ChargeClass not Correction", split: true, edit: map[string]string{"ChargeClass": "Refund"}, rule: "ChargeClass.AllowedValues"},
		{name: "ChargeFrequency not allowed", split: true, edit: map[string]string{"ChargeFrequency": "Hourly"}, rule: "ChargeFrequency.AllowedValues"},
		{name: "PricingCategory not allowed", split: true, edit: map[string]string{"PricingCategory": "List"}, rule: "PricingCategory.AllowedValues"},
		{name: "ServiceCategory not allowed", edit: map[string]string{"ServiceCategory": "GPU"}, rule: "ServiceCategory.AllowedValues", extra: true},
		{name: "ServiceSubcategory not allowed", split: true, edit: map[string]string{"ServiceSubcategory": "GPUs"}, rule: "ServiceSubcategory.AllowedValues"},
		{name: "ServiceSubcategory of another category", split: true, edit: map[string]string{"ServiceSubcategory": "Generative AI"}, rule: "ServiceSubcategory.Parent"},
		{name: "usage-based purchase", edit: map[string]string{"ChargeCategory": "Purchase"}, rule: "ChargeFrequency.NotUsageBasedForPurchase", extra: true},
		{name: "usage without PricingQuantity", row: 1, edit: map[string]string{"PricingQuantity": "", "PricingUnit": ""}, rule: "PricingQuantity.NotNullForUsage", extra: true},
		{name: "usage without ListUnitPrice", row: 1, edit: map[string]string{"ListUnitPrice": ""}, rule: "ListUnitPrice.NotNullForUsage", extra: true},
		{name: "usage without SkuId", row: 1, edit: map[string]string{"SkuId": "", "SkuMeter": "", "SkuPriceId": ""}, rule: "SkuId.NotNullForUsage", extra: true},
		{name: "usage without PricingCategory", split: true, edit: map[string]string{"PricingCategory": ""}, rule: "PricingCategory.NotNullForUsage"},
		{name: "tax with a unit price", row: 2, edit: map[string]string{"ChargeCategory": "Tax", "ListUnitPrice": "1"}, rule: "ListUnitPrice.NullForTax", extra: true},
		{name: "usage without ConsumedQuantity", split: true, edit: map[string]string{"ConsumedQuantity": "", "ConsumedUnit": ""}, rule: "ConsumedQuantity.NotNullForUsage"},
		{name: "ConsumedQuantity on an adjustment", row: 2, edit: map[string]string{"ConsumedQuantity": "1", "ConsumedUnit": "GPU-Hours"}, rule: "ConsumedQuantity.NullUnlessUsage", extra: true},
		{name: "ConsumedUnit without quantity", row: 2, edit: map[string]string{"ConsumedUnit": "GPU-Hours"}, rule: "ConsumedUnit.NullWithConsumedQuantity"},
		{name: "quantity without ConsumedUnit", split: true, edit: map[string]string{"ConsumedUnit": ""}, rule: "ConsumedUnit.NotNullWithConsumedQuantity"},
		{name: "unit price without a SKU price", row: 2, edit: map[string]string{"ContractedUnitPrice": "2.50"}, rule: "ContractedUnitPrice.NullWithSkuPriceId"},
		{name: "SKU price without a unit price", row: 1, edit: map[string]string{"ContractedUnitPrice": "", "ChargeCategory": "Credit", "ChargeFrequency": "One-Time", "ConsumedQuantity": "", "ConsumedUnit": "", "ContractedCost": "8.33", "EffectiveCost": "8.33"}, rule: "ContractedUnitPrice.NotNullWithSkuPriceId", extra: true},
		{name: "quantity without a SKU price", row: 2, edit: map[string]string{"PricingQuantity": "1", "PricingUnit": "GPU-Hours"}, rule: "PricingQuantity.NullWithSkuPriceId"},
		{name: "PricingUnit without quantity", row: 2, edit: map[string]string{"PricingUnit": "GPU-Hours"}, rule: "PricingUnit.NullWithPricingQuantity"},
		{name: "ResourceType without ResourceId", row: 2, edit: map[string]string{"ResourceType": "GPU Pool"}, rule: "ResourceType.NullWithResourceId"},
		{name: "ResourceId without ResourceType", edit: map[string]string{"ResourceType": ""}, rule: "ResourceType.NotNullWithResourceId", extra: true},
		{name: "SubAccountName without SubAccountId", row: 2, edit: map[string]string{"SubAccountName": "ml"}, rule: "SubAccountName.NullWithSubAccountId"},
		{name: "SkuMeter without SkuId", row: 2, edit: map[string]string{"SkuMeter": "GPU-Hours"}, rule: "SkuMeter.NullWithSkuId"},
		{name: "charge period backwards", edit: map[string]string{"ChargePeriodEnd": "2026-02-01T00:00:00Z"}, rule: "ChargePeriodEnd.AfterStart", extra: true},
		{name: "billing period empty", row: 2, edit: map[string]string{"BillingPeriodEnd": "2026-03-01T00:00:00Z"}, rule: "BillingPeriodEnd.AfterStart"},
		{name: "negative unit price", edit: map[string]string{"ContractedUnitPrice": "-2.50"}, rule: "ContractedUnitPrice.NonNegative", extra: true},
		{name: "ListCost off by two cents", edit: map[string]string{"ListCost": "16.69"}, rule: "ListCost.MatchesUnitPrice"},
		{name: "ContractedCost not price x quantity", row: 1, edit: map[string]string{"ContractedCost": "9.00"}, rule: "ContractedCost.MatchesUnitPrice"},
		{name: "adjustment ListCost differs from BilledCost", row: 2, edit: map[string]string{"ListCost": "0.00"}, rule: "ListCost.MatchesBilledCost"},
		{name: "adjustment EffectiveCost differs", row: 2, edit: map[string]string{"EffectiveCost": "0.01"}, rule: "EffectiveCost.MatchesBilledCost"},
		{name: "allocated resource without method", row: 2, edit: map[string]string{"AllocatedResourceId": "ns", "AllocatedResourceName": "ns"}, rule: "AllocatedResourceId.NullWithAllocatedMethodId"},
		{name: "allocated tags without method", row: 2, edit: map[string]string{"AllocatedTags": `{"team":"ml"}`}, rule: "AllocatedTags.NullWithAllocatedMethodId"},
		{name: "allocated resource without name", edit: map[string]string{"AllocatedResourceName": ""}, rule: "AllocatedResourceName.NotNullWithAllocatedResourceId"},
		{name: "allocated tags repeat Tags", edit: map[string]string{"AllocatedTags": `{"model":"A100"}`}, rule: "AllocatedTags.NotInTags"},
		{name: "method details without Elements", edit: map[string]string{"AllocatedMethodDetails": `{"Ratio":1}`}, rule: "AllocatedMethodDetails.ObjectSchema", extra: true},
		{name: "ratio not a number", edit: map[string]string{"AllocatedMethodDetails": `{"Elements":[{"AllocatedRatio":"0.6"}]}`}, rule: "AllocatedMethodDetails.ObjectSchema", extra: true},
		{name: "usage quantity without unit", edit: map[string]string{"AllocatedMethodDetails": `{"Elements":[{"AllocatedRatio":0.666666666667,"UsageQuantity":6}]}`}, rule: "AllocatedMethodDetails.ObjectSchema", extra: true},
		{name: "ratios add up to 0.9", row: 1, edit: map[string]string{"AllocatedMethodDetails": `{"Elements":[{"AllocatedRatio":0.233333333333}]}`}, rule: "AllocatedMethodDetails.RatiosSumToOne"},
		{name: "allocated charge with another unit price", row: 1, edit: map[string]string{"ListUnitPrice": "2.51", "ListCost": "8.37"}, rule: "ListUnitPrice.MatchesOriginCharge"},
		{name: "allocated charge with other tags", row: 1, edit: map[string]string{"Tags": `{"model":"H100"}`}, rule: "Tags.MatchesOriginCharge"},
		{name: "allocated charge with another resource type", row: 1, edit: map[string]string{"ResourceType": "MIG Instance"}, rule: "ResourceType.MatchesOriginCharge"},
		{name: "allocated charge with another resource name", row: 1, edit: map[string]string{"ResourceName": "A100 GPU-1"}, rule: "ResourceName.MatchesOriginCharge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, version := validRows(), Version13
			if c.v14 {
				rows, version = validRows14()
			}
			for k, v := range c.edit {
				rows[c.row][k] = v
				if c.split {
					rows[0][k], rows[1][k] = v, v
				}
			}
			if c.drop != "" {
				for _, r := range rows {
					delete(r, c.drop)
				}
			}
			h, recs := table(rows)
			got := rules(CheckVersion(h, recs, version))
			if !slices.Contains(got, c.rule) {
				t.Fatalf("broken %s: got %v, want %s", c.name, got, c.rule)
			}
			if !c.extra && slices.ContainsFunc(got, func(r string) bool { return r != c.rule }) {
				t.Errorf("broken %s: got %v, want only %s", c.name, got, c.rule)
			}
		})
	}
}

func TestValidateReadsCSV(t *testing.T) {
	h, rows := table(validRows())
	var b strings.Builder
	b.WriteString(strings.Join(h, ",") + "\n")
	for _, r := range rows {
		for i := range r {
			if strings.ContainsAny(r[i], `",`) {
				r[i] = `"` + strings.ReplaceAll(r[i], `"`, `""`) + `"`
			}
		}
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	vs, err := Validate(strings.NewReader(b.String()))
	if err != nil || len(vs) > 0 {
		t.Fatalf("Validate: %v %v", vs, err)
	}
	if vs, err := ValidateVersion(strings.NewReader(b.String()), Version14); err != nil || !slices.Contains(rules(vs), "ProviderName.CustomColumnPrefix") {
		t.Errorf("1.3 file read as 1.4: %v %v", vs, err)
	}
	if _, err := ValidateVersion(strings.NewReader(b.String()), "1.2"); err == nil {
		t.Error("unknown version: no error")
	}
	if _, err := Validate(strings.NewReader("a,b\n\"x")); err == nil {
		t.Error("broken CSV: no error")
	}
	if vs, _ := Validate(strings.NewReader("")); len(vs) != 1 || vs[0].Rule != "File.Header" {
		t.Errorf("empty file: %v", vs)
	}
	if vs := Check(h, [][]string{rows[0][:len(rows[0])-1]}); !slices.Contains(rules(vs), "File.Width") {
		t.Errorf("short row: %v", vs)
	}
	if vs, _ := Validate(strings.NewReader(strings.Join(h, ",") + "," + h[0] + "\n")); !slices.Contains(rules(vs), h[0]+".Unique") {
		t.Errorf("duplicate column: %v", vs)
	}
}
