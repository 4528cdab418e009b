package focusvalidate

import (
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Violation is one broken rule.
type Violation struct {
	// Row is the data row, counted from 1 after the header; 0 for the
	// header or a rule over several rows.
	Row    int
	Column string
	// Rule names the rule, "Column.Rule" (e.g. "BilledCost.NotNull"), so
	// that tests can tell which rule fired.
	Rule   string
	Detail string
}

func (v Violation) String() string {
	where := "header"
	if v.Row > 0 {
		where = fmt.Sprintf("row %d", v.Row)
	}
	return fmt.Sprintf("%s: %s: %s", where, v.Rule, v.Detail)
}

// Validate reads a FOCUS 1.3 CSV (a header row, then one row per charge)
// and returns every rule it breaks. The error is for a file that cannot be
// read as CSV at all.
func Validate(r io.Reader) ([]Violation, error) { return ValidateVersion(r, Version13) }

// ValidateVersion is Validate for a given FOCUS version, Version13 or
// Version14: each has its own columns and mandatory set. An unknown
// version is an error.
func ValidateVersion(r io.Reader, version string) ([]Violation, error) {
	if _, ok := columnsFor(version); !ok {
		return nil, fmt.Errorf("cannot validate FOCUS %q: want %s or %s", version, Version13, Version14)
	}
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("cannot read FOCUS CSV: %w", err)
	}
	if len(recs) == 0 {
		return []Violation{{Rule: "File.Header", Detail: "no header row"}}, nil
	}
	return CheckVersion(recs[0], recs[1:], version), nil
}

// Check applies the FOCUS 1.3 rules to a header and its rows.
func Check(header []string, rows [][]string) []Violation {
	return CheckVersion(header, rows, Version13)
}

// CheckVersion applies a FOCUS version's rules to a header and its rows;
// an unknown version is checked as 1.3.
func CheckVersion(header []string, rows [][]string, version string) []Violation {
	spec, ok := columnsFor(version)
	if !ok {
		version, spec = Version13, columns
	}
	c := &checker{cols: map[string]int{}, spec: spec, version: version}
	c.header(header)
	for i, rec := range rows {
		r := record{n: i + 1, cols: c.cols, cells: rec}
		c.row(r)
		c.collectOrigin(r)
		c.collectSkuPrice(r)
	}
	c.origins()
	return c.out
}

type checker struct {
	spec    map[string]column // the version's columns
	version string
	names   []string // the header's FOCUS and custom columns, sorted
	width   int
	cols    map[string]int
	out     []Violation
	groups  map[originKey]*origin
	// skuPrices: each SkuPriceId's SkuPriceDetails and the row it was
	// first seen on.
	skuPrices map[string]skuPrice
}

func (c *checker) add(row int, col, rule, format string, args ...any) {
	c.out = append(c.out, Violation{Row: row, Column: col, Rule: col + "." + rule, Detail: fmt.Sprintf(format, args...)})
}

// customColumn is the specification's form for columns it does not
// define: an x_ prefix, then PascalCase.
var customColumn = regexp.MustCompile(`^x_[A-Z][A-Za-z0-9]*$`)

func (c *checker) header(h []string) {
	c.width = len(h)
	for i, name := range h {
		if _, dup := c.cols[name]; dup {
			c.add(0, name, "Unique", "column %q appears twice", name)
			continue
		}
		c.cols[name] = i
		c.names = append(c.names, name)
		if _, ok := c.spec[name]; !ok && !customColumn.MatchString(name) {
			c.add(0, name, "CustomColumnPrefix", "%q is not a FOCUS %s column and has no x_ prefix with a PascalCase name", name, c.version)
		}
	}
	slices.Sort(c.names)
	for _, name := range c.sortedColumns() {
		if c.spec[name].level == mandatory && !c.has(name) {
			c.add(0, name, "Present", "mandatory column %s of FOCUS %s is missing", name, c.version)
		}
	}
	for _, name := range c.sortedColumns() {
		if !c.has(name) {
			continue
		}
		for _, need := range requires[name] {
			if !c.has(need) {
				c.add(0, need, "Present", "%s is missing, and %s's rules depend on it", need, name)
			}
		}
	}
}

func (c *checker) has(col string) bool { _, ok := c.cols[col]; return ok }

func (c *checker) sortedColumns() []string {
	ks := make([]string, 0, len(c.spec))
	for k := range c.spec {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// record is one data row; a column the file lacks reads as null.
type record struct {
	n     int
	cols  map[string]int
	cells []string
}

// get returns a cell and whether it is not null.
func (r record) get(col string) (string, bool) {
	i, ok := r.cols[col]
	if !ok || i >= len(r.cells) || r.cells[i] == "" {
		return "", false
	}
	return r.cells[i], true
}

func (r record) null(col string) bool { _, ok := r.get(col); return !ok }

func (r record) is(col, value string) bool { v, ok := r.get(col); return ok && v == value }

var (
	numeric  = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?(E-?[0-9]+)?$`)
	dateTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`)
	iso4217  = regexp.MustCompile(`^[A-Z]{3}$`)
)

func (c *checker) row(r record) {
	if len(r.cells) != c.width {
		c.add(r.n, "File", "Width", "%d cells, the header has %d columns", len(r.cells), c.width)
	}
	c.formats(r)
	c.allowedValues(r)
	c.nullability(r)
	c.periods(r)
	c.costs(r)
	c.allocation(r)
}

// formats checks each cell's data type and value format, and the
// not-null columns.
func (c *checker) formats(r record) {
	for _, name := range c.names {
		col, known := c.spec[name]
		if !known {
			continue
		}
		v, ok := r.get(name)
		if !ok {
			if col.notNull {
				c.add(r.n, name, "NotNull", "%s must not be null", name)
			}
			continue
		}
		switch col.typ {
		case typeString:
			if strings.TrimSpace(v) == "" {
				c.add(r.n, name, "StringHandling", "%s is only spaces", name)
			}
		case typeDecimal:
			if !numeric.MatchString(v) {
				c.add(r.n, name, "NumericFormat", "%s %q is not a FOCUS numeric value", name, v)
			}
		case typeDateTime:
			if _, err := time.Parse(time.RFC3339, v); err != nil || !dateTime.MatchString(v) {
				c.add(r.n, name, "DateTimeFormat", "%s %q is not YYYY-MM-DDTHH:mm:ssZ in UTC", name, v)
			}
		case typeCurrency:
			if !iso4217.MatchString(v) {
				c.add(r.n, name, "CurrencyFormat", "%s %q is not an ISO 4217 code", name, v)
			}
		case typeKeyValue:
			if _, err := keyValues(v); err != nil {
				c.add(r.n, name, "KeyValueFormat", "%s: %v", name, err)
			}
		case typeJSON:
			if err := validJSON(v); err != nil {
				c.add(r.n, name, "JsonFormat", "%s: %v", name, err)
			}
		}
	}
}

func (c *checker) allowedValues(r record) {
	enum := func(col string, allowed map[string]bool) {
		if v, ok := r.get(col); ok && !allowed[v] {
			c.add(r.n, col, "AllowedValues", "%s %q is not an allowed value", col, v)
		}
	}
	enum("ChargeCategory", chargeCategories)
	enum("ChargeFrequency", chargeFrequencies)
	enum("PricingCategory", pricingCategories)
	enum("ServiceCategory", serviceCategories)
	if v, ok := r.get("ChargeClass"); ok && v != "Correction" {
		c.add(r.n, "ChargeClass", "AllowedValues", "ChargeClass %q: must be null or Correction", v)
	}
	if v, ok := r.get("ServiceSubcategory"); ok {
		parent, known := serviceSubcategories[v]
		cat, _ := r.get("ServiceCategory")
		switch {
		case !known:
			c.add(r.n, "ServiceSubcategory", "AllowedValues", "ServiceSubcategory %q is not an allowed value", v)
		case parent != cat:
			c.add(r.n, "ServiceSubcategory", "Parent", "ServiceSubcategory %q belongs to ServiceCategory %q, not %q", v, parent, cat)
		}
	}
	if r.is("ChargeCategory", "Purchase") && r.is("ChargeFrequency", "Usage-Based") {
		c.add(r.n, "ChargeFrequency", "NotUsageBasedForPurchase", `ChargeFrequency must not be "Usage-Based" when ChargeCategory is "Purchase"`)
	}
}

// nullability checks the null rules that depend on other columns.
func (c *checker) nullability(r record) {
	// HostProviderName "MAY be NULL" when the host cannot be told, "e.g.,
	// when the ChargeCategory is Tax or Adjustment"; it must not be null
	// otherwise.
	if c.has("HostProviderName") && r.null("HostProviderName") && !r.is("ChargeCategory", "Tax") && !r.is("ChargeCategory", "Adjustment") {
		c.add(r.n, "HostProviderName", "NotNull", "HostProviderName must not be null for a %s charge", cellOr(r, "ChargeCategory"))
	}
	correction := r.is("ChargeClass", "Correction")
	usageOrPurchase := r.is("ChargeCategory", "Usage") || r.is("ChargeCategory", "Purchase")
	tax := r.is("ChargeCategory", "Tax")
	// Columns that must be null for tax and must not be null for usage
	// or purchases that are not corrections.
	for _, col := range []string{"PricingQuantity", "ListUnitPrice", "ContractedUnitPrice", "PricingCategory", "SkuId", "SkuPriceId"} {
		if !c.has(col) {
			continue
		}
		switch {
		case tax && !r.null(col):
			c.add(r.n, col, "NullForTax", `%s must be null when ChargeCategory is "Tax"`, col)
		case usageOrPurchase && !correction && r.null(col):
			c.add(r.n, col, "NotNullForUsage", `%s must not be null when ChargeCategory is "Usage" or "Purchase" and ChargeClass is not "Correction"`, col)
		}
	}
	// A charge without a SKU price has no quantity priced or consumed.
	if c.has("SkuPriceId") && r.null("SkuPriceId") {
		for _, col := range []string{"PricingQuantity", "ConsumedQuantity"} {
			if c.has(col) && !r.null(col) {
				c.add(r.n, col, "NullWithSkuPriceId", "%s must be null when SkuPriceId is null", col)
			}
		}
	}
	if c.has("ConsumedQuantity") {
		unused := r.is("CommitmentDiscountStatus", "Unused")
		switch {
		case (!r.is("ChargeCategory", "Usage") || unused) && !r.null("ConsumedQuantity"):
			c.add(r.n, "ConsumedQuantity", "NullUnlessUsage", `ConsumedQuantity must be null unless ChargeCategory is "Usage" (and the commitment discount is not "Unused")`)
		case r.is("ChargeCategory", "Usage") && !unused && !correction && r.null("ConsumedQuantity"):
			c.add(r.n, "ConsumedQuantity", "NotNullForUsage", `ConsumedQuantity must not be null for "Usage" charges that are not corrections`)
		}
	}
	// Pairs: the first is null exactly when the second is ("iff"), or at
	// least whenever the second is ("when").
	pairs := []struct {
		col, of string
		iff     bool
	}{
		{"ConsumedUnit", "ConsumedQuantity", true},
		{"PricingUnit", "PricingQuantity", true},
		{"SubAccountName", "SubAccountId", true},
		{"SubAccountType", "SubAccountId", true},
		{"BillingAccountType", "BillingAccountId", true},
		{"ResourceType", "ResourceId", true},
		{"ResourceName", "ResourceId", false},
		{"SkuMeter", "SkuId", false},
		{"ListUnitPrice", "SkuPriceId", true},
		{"ContractedUnitPrice", "SkuPriceId", true},
		{"SkuPriceDetails", "SkuPriceId", false},
		{"AllocatedResourceName", "AllocatedResourceId", true},
		{"AllocatedResourceId", "AllocatedMethodId", false},
		{"AllocatedMethodDetails", "AllocatedMethodId", false},
		{"AllocatedTags", "AllocatedMethodId", false},
	}
	for _, p := range pairs {
		if !c.has(p.col) || !c.has(p.of) {
			continue
		}
		switch {
		case r.null(p.of) && !r.null(p.col):
			c.add(r.n, p.col, "NullWith"+p.of, "%s must be null when %s is null", p.col, p.of)
		case p.iff && !r.null(p.of) && r.null(p.col):
			c.add(r.n, p.col, "NotNullWith"+p.of, "%s must not be null when %s is not null", p.col, p.of)
		}
	}
}

// periods checks that each period's start is before its end.
func (c *checker) periods(r record) {
	for _, p := range []string{"BillingPeriod", "ChargePeriod"} {
		s, ok1 := r.get(p + "Start")
		e, ok2 := r.get(p + "End")
		if !ok1 || !ok2 {
			continue
		}
		ts, err1 := time.Parse(time.RFC3339, s)
		te, err2 := time.Parse(time.RFC3339, e)
		if err1 == nil && err2 == nil && !ts.Before(te) {
			c.add(r.n, p+"End", "AfterStart", "%sEnd %s is not after %sStart %s", p, e, p, s)
		}
	}
}

// decimalOf parses a numeric cell exactly; nil when null or malformed
// (formats reports those).
func decimalOf(r record, col string) (*big.Rat, int) {
	v, ok := r.get(col)
	if !ok || !numeric.MatchString(v) {
		return nil, 0
	}
	x, ok := new(big.Rat).SetString(v)
	if !ok {
		return nil, 0
	}
	return x, decimals(v)
}

// decimals is the number of decimal places a numeric text is written to.
func decimals(v string) int {
	mant, exp, _ := strings.Cut(v, "E")
	d := 0
	if _, frac, ok := strings.Cut(mant, "."); ok {
		d = len(frac)
	}
	if exp != "" {
		var e int
		fmt.Sscan(exp, &e)
		d -= e
	}
	return max(d, 0)
}

// costs checks the cost columns against the unit prices and quantities.
//
// "The product of ListUnitPrice and PricingQuantity MUST match the
// ListCost": the three are decimals written to a finite number of places,
// so match means within one unit in the last place of the cost, plus the
// price times half a unit in the last place of the quantity (the
// quantity's own rounding).
func (c *checker) costs(r record) {
	billed, _ := decimalOf(r, "BilledCost")
	qty, dq := decimalOf(r, "PricingQuantity")
	correction := r.is("ChargeClass", "Correction")
	for _, p := range []struct{ price, cost string }{{"ListUnitPrice", "ListCost"}, {"ContractedUnitPrice", "ContractedCost"}} {
		price, _ := decimalOf(r, p.price)
		if price != nil && price.Sign() < 0 {
			c.add(r.n, p.price, "NonNegative", "%s must not be negative", p.price)
		}
		cost, dc := decimalOf(r, p.cost)
		if price != nil && qty != nil && cost != nil && !correction {
			product := new(big.Rat).Mul(price, qty)
			diff := new(big.Rat).Sub(product, cost)
			diff.Abs(diff)
			tol := new(big.Rat).Add(pow10(-dc), new(big.Rat).Mul(price, new(big.Rat).Mul(big.NewRat(1, 2), pow10(-dq))))
			if diff.Cmp(tol) > 0 {
				c.add(r.n, p.cost, "MatchesUnitPrice", "%s x PricingQuantity = %s, %s is %s", p.price, product.FloatString(dc+2), p.cost, cost.FloatString(dc))
			}
		}
		// A charge unrelated to other charges, with no unit price:
		// its cost matches BilledCost.
		if price == nil && cost != nil && billed != nil && unrelated(r) && cost.Cmp(billed) != 0 {
			c.add(r.n, p.cost, "MatchesBilledCost", "%s must match BilledCost for a %s charge without a unit price", p.cost, cellOr(r, "ChargeCategory"))
		}
	}
	if eff, _ := decimalOf(r, "EffectiveCost"); eff != nil && billed != nil && unrelated(r) && eff.Cmp(billed) != 0 {
		c.add(r.n, "EffectiveCost", "MatchesBilledCost", "EffectiveCost must match BilledCost for a %s charge", cellOr(r, "ChargeCategory"))
	}
}

// unrelated: a charge the specification counts as unrelated to other
// charges ("e.g., when the ChargeCategory is Credit"); adjustments are
// treated the same way here.
func unrelated(r record) bool {
	return r.is("ChargeCategory", "Credit") || r.is("ChargeCategory", "Adjustment")
}

func cellOr(r record, col string) string { v, _ := r.get(col); return v }

func pow10(n int) *big.Rat {
	if n >= 0 {
		return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
	}
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-n)), nil))
}
