package focusvalidate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// keyValues parses a KeyValueFormat cell: a JSON object with unique keys
// whose values are numbers, strings, true, false or null, never objects
// or arrays.
func keyValues(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	out := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key, _ := t.(string)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		v, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		if _, nested := v.(json.Delim); nested {
			return nil, fmt.Errorf("value of %q is an object or array", key)
		}
		out[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON object")
	}
	return out, nil
}

func validJSON(s string) error {
	if !json.Valid([]byte(s)) {
		return errors.New("not valid JSON")
	}
	return nil
}

// methodDetails is AllocatedMethodDetailsObject: a top-level Elements
// array of one or more objects, each with a numeric AllocatedRatio, an
// optional numeric UsageQuantity that needs a string UsageUnit; any other
// key must be x_ and PascalCase.
type methodDetails struct {
	ratios []string // each element's AllocatedRatio as written
}

func parseMethodDetails(s string) (methodDetails, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil || top == nil {
		return methodDetails{}, errors.New("not a JSON object")
	}
	for k := range top {
		if k != "Elements" && !customColumn.MatchString(k) {
			return methodDetails{}, fmt.Errorf("top-level key %q is neither Elements nor x_ PascalCase", k)
		}
	}
	raw, ok := top["Elements"]
	if !ok {
		return methodDetails{}, errors.New("no Elements array")
	}
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
		return methodDetails{}, errors.New("Elements is not a non-empty array of objects")
	}
	var md methodDetails
	for i, e := range elems {
		for k := range e {
			if k != "AllocatedRatio" && k != "UsageUnit" && k != "UsageQuantity" && !customColumn.MatchString(k) {
				return md, fmt.Errorf("Elements[%d]: key %q is not a FOCUS key nor x_ PascalCase", i, k)
			}
		}
		ratio, err := jsonNumber(e["AllocatedRatio"])
		if err != nil {
			return md, fmt.Errorf("Elements[%d].AllocatedRatio: %w", i, err)
		}
		if q, has := e["UsageQuantity"]; has {
			if _, err := jsonNumber(q); err != nil {
				return md, fmt.Errorf("Elements[%d].UsageQuantity: %w", i, err)
			}
			var unit string
			if err := json.Unmarshal(e["UsageUnit"], &unit); err != nil || unit == "" {
				return md, fmt.Errorf("Elements[%d]: UsageQuantity without a string UsageUnit", i)
			}
		}
		md.ratios = append(md.ratios, ratio)
	}
	return md, nil
}

var jsonNumberText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// jsonNumber returns a JSON number's text; a string holding digits is not
// a number.
func jsonNumber(raw json.RawMessage) (string, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		return "", errors.New("missing")
	}
	if !jsonNumberText.MatchString(s) {
		return "", errors.New("not a number")
	}
	return s, nil
}

// allocation checks the split cost allocation columns of one row.
func (c *checker) allocation(r record) {
	if v, ok := r.get("AllocatedMethodDetails"); ok {
		if _, err := parseMethodDetails(v); err != nil {
			c.add(r.n, "AllocatedMethodDetails", "ObjectSchema", "%v", err)
		}
	}
	// AllocatedTags must not repeat resource tags already in Tags.
	at, ok1 := r.get("AllocatedTags")
	tags, ok2 := r.get("Tags")
	if ok1 && ok2 {
		a, err1 := keyValues(at)
		t, err2 := keyValues(tags)
		if err1 == nil && err2 == nil {
			for k := range a {
				if _, dup := t[k]; dup {
					c.add(r.n, "AllocatedTags", "NotInTags", "AllocatedTags repeats the key %q of Tags", k)
				}
			}
		}
	}
}

// originKey identifies an origin charge: the allocated charges split
// from one charge share its resource, charge period and method.
type originKey struct{ resource, start, end, method string }

type origin struct {
	rows  []int
	sum   *big.Rat
	tol   *big.Rat
	first record
}

// collectOrigin adds a split row's ratios to its origin charge, and checks
// that it repeats the origin's dimensions and unit prices.
func (c *checker) collectOrigin(r record) {
	method, ok := r.get("AllocatedMethodId")
	details, ok2 := r.get("AllocatedMethodDetails")
	if !ok || !ok2 {
		return
	}
	md, err := parseMethodDetails(details)
	if err != nil {
		return
	}
	res, _ := r.get("ResourceId")
	s, _ := r.get("ChargePeriodStart")
	e, _ := r.get("ChargePeriodEnd")
	k := originKey{res, s, e, method}
	if c.groups == nil {
		c.groups = map[originKey]*origin{}
	}
	g := c.groups[k]
	if g == nil {
		g = &origin{sum: new(big.Rat), tol: new(big.Rat), first: r}
		c.groups[k] = g
	}
	g.rows = append(g.rows, r.n)
	for _, ratio := range md.ratios {
		x, ok := new(big.Rat).SetString(ratio)
		if !ok {
			continue
		}
		g.sum.Add(g.sum, x)
		// Each ratio is written to finitely many places: allow half a
		// unit in its last place.
		g.tol.Add(g.tol, new(big.Rat).Mul(big.NewRat(1, 2), pow10(-decimals(strings.ToUpper(ratio)))))
	}
	// Dimensions and non-summable metrics (unit prices) of allocated
	// charges match the origin charge's: every FOCUS column but the
	// summable metrics and the allocation columns.
	for _, col := range c.names {
		if _, known := c.spec[col]; !known || splitColumns[col] {
			continue
		}
		if got, want := cellOr(r, col), cellOr(g.first, col); got != want {
			c.add(r.n, col, "MatchesOriginCharge", "%s %q differs from %q on row %d, split from the same origin charge", col, got, want, g.first.n)
		}
	}
}

type skuPrice struct {
	details string
	row     int
}

// collectSkuPrice checks SkuPriceDetails: PascalCase keys (FOCUS's own,
// or x_ and PascalCase for the data generator's), and the same properties
// on every charge of one SkuPriceId.
func (c *checker) collectSkuPrice(r record) {
	details, ok := r.get("SkuPriceDetails")
	if !ok {
		return
	}
	kv, err := keyValues(details)
	if err != nil {
		return // formats reports it
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if !pascalKey.MatchString(k) && !customColumn.MatchString(k) {
			c.add(r.n, "SkuPriceDetails", "KeyFormat", "SkuPriceDetails key %q is neither PascalCase nor x_ and PascalCase", k)
		}
	}
	id, ok := r.get("SkuPriceId")
	if !ok {
		return // nullability reports it
	}
	if c.skuPrices == nil {
		c.skuPrices = map[string]skuPrice{}
	}
	first, seen := c.skuPrices[id]
	if !seen {
		c.skuPrices[id] = skuPrice{details, r.n}
		return
	}
	if !sameKeyValues(first.details, details) {
		c.add(r.n, "SkuPriceDetails", "SharedBySkuPriceId", "SkuPriceDetails %s differs from %s on row %d, with the same SkuPriceId %q", details, first.details, first.row, id)
	}
}

// pascalKey is a PascalCase key: a capital, then letters and digits.
var pascalKey = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// sameKeyValues compares two KeyValueFormat cells by content, whatever
// the order of their keys.
func sameKeyValues(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := keyValues(a)
	y, err2 := keyValues(b)
	if err1 != nil || err2 != nil || len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || fmt.Sprintf("%T %v", v, v) != fmt.Sprintf("%T %v", w, w) {
			return false
		}
	}
	return true
}

// origins checks that the AllocatedRatio of each origin charge's
// allocated charges add up to 1.
func (c *checker) origins() {
	keys := make([]originKey, 0, len(c.groups))
	for k := range c.groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b originKey) int {
		return strings.Compare(a.resource+a.start+a.method, b.resource+b.start+b.method)
	})
	for _, k := range keys {
		g := c.groups[k]
		diff := new(big.Rat).Sub(g.sum, big.NewRat(1, 1))
		if diff.Abs(diff).Cmp(g.tol) > 0 {
			c.add(0, "AllocatedMethodDetails", "RatiosSumToOne", "AllocatedRatio of rows %v (resource %q, method %q) add up to %s, not 1",
				g.rows, k.resource, k.method, g.sum.FloatString(12))
		}
	}
}
