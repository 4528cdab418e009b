package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// tablePrices holds the price books the dashboards price the ledger with
// (docs/dashboards.md). Each load of a book adds its rows under a new
// version; readers use the newest version only, so a change of rates is one
// insert and the old books stay for audit.
const tablePrices = "gpuledger_prices"

// pricesColumns: one row per rated model plus one row with is_default = 1
// (model ”) for the default rate. Rates are the book's decimal text, read
// by SQL as Decimal128(PriceRateScale): exact, never a float.
const pricesColumns = `version UInt64,
	loaded_at DateTime('UTC'),
	source String,
	currency String,
	minor_unit UInt32,
	timezone String,
	policy String,
	idle String,
	model String,
	is_default UInt32,
	rate String`

var pricesTable = table{
	name:     tablePrices,
	columns:  pricesColumns,
	engine:   "MergeTree",
	orderBy:  "version, model",
	shardKey: "version",
}

// PriceRateScale is the number of decimals the dashboards' SQL keeps of a
// rate: rates written with more decimals are refused by WritePrices, so the
// SQL always sees the exact rate the report charges.
const PriceRateScale = 12

// maxRateIntegerDigits bounds a rate's integer part so that the SQL's
// Decimal128 products cannot overflow (docs/dashboards.md, "Exactness").
const maxRateIntegerDigits = 9

// PriceRow is one row of the prices table, as WritePrices writes it.
type PriceRow struct {
	Model     string
	IsDefault bool
	Rate      string
}

// Prices is a price book as the dashboards' table keeps it: plain values,
// so that this store does not import the price book (storage never
// imports money). The caller builds it from its book; PriceRows and
// WritePrices check it.
type Prices struct {
	Source    string // the file the book came from, for messages
	Currency  string // ISO 4217 code
	MinorUnit int    // the currency's decimals
	Timezone  string // IANA name as written; empty is UTC
	Policy    string // allocation, usage, flat, quota...
	Idle      string
	// MemoryWeighted says the book blends memory into the charge, which
	// the dashboards do not price.
	MemoryWeighted bool
	// Rates are each rated model's rate as exact decimal text; DefaultRate
	// the rate of every other model.
	Rates       map[string]string
	DefaultRate string
}

// PriceRows turns prices into the rows WritePrices stores, checking that
// the dashboards' SQL can carry every rate exactly.
func PriceRows(p *Prices) ([]PriceRow, error) {
	switch {
	case p == nil:
		return nil, errors.New("cannot store prices: no price book")
	case p.Policy == policyFlat:
		// The dashboards price hours by a rate; a flat book has none, so
		// every money panel would read 0.
		return nil, errors.New("cannot store prices for the dashboards: policy flat (slot prices per month) is not priced by the ClickHouse dashboards; use gpuledger report")
	case p.MemoryWeighted:
		// The dashboards charge used time only: a memory blend would be
		// priced silently wrong.
		return nil, errors.New("cannot store prices for the dashboards: memoryWeight is not priced by the ClickHouse dashboards (they charge used or held time only); use gpuledger report")
	}
	var out []PriceRow
	var errs []string
	add := func(model string, def bool, text string) {
		intPart, frac, _ := strings.Cut(text, ".")
		switch {
		case len(frac) > PriceRateScale:
			errs = append(errs, fmt.Sprintf("rate %s of %s has more than %d decimals", text, label(model, def), PriceRateScale))
		case len(strings.TrimLeft(intPart, "0")) > maxRateIntegerDigits:
			errs = append(errs, fmt.Sprintf("rate %s of %s has more than %d integer digits", text, label(model, def), maxRateIntegerDigits))
		}
		out = append(out, PriceRow{Model: model, IsDefault: def, Rate: text})
	}
	models := make([]string, 0, len(p.Rates))
	for m := range p.Rates {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		add(m, false, p.Rates[m])
	}
	add("", true, p.DefaultRate)
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot store price book %s for the dashboards: %s", p.Source, strings.Join(errs, "; "))
	}
	return out, nil
}

// policyFlat is the price book's flat policy (slot prices per month).
const policyFlat = "flat"

func label(model string, def bool) string {
	if def {
		return "defaultRate"
	}
	return "model " + model
}

// WritePrices stores book as the newest price book of the database, for
// the ClickHouse dashboards. The version is the load time in nanoseconds.
func (s *Store) WritePrices(ctx context.Context, book *Prices, now time.Time) error {
	rows, err := PriceRows(book)
	if err != nil {
		return err
	}
	n := len(rows)
	version := uint64(now.UnixNano())
	loaded := now.UTC().Truncate(time.Second)
	var (
		versions         = make([]uint64, n)
		loadedAt         = make([]time.Time, n)
		source, currency = make([]string, n), make([]string, n)
		minor            = make([]uint32, n)
		tz, policy, idle = make([]string, n), make([]string, n), make([]string, n)
		model, rate      = make([]string, n), make([]string, n)
		isDefault        = make([]uint32, n)
	)
	for i, r := range rows {
		versions[i], loadedAt[i], source[i], currency[i] = version, loaded, book.Source, book.Currency
		minor[i], tz[i], policy[i], idle[i] = uint32(book.MinorUnit), book.Timezone, book.Policy, book.Idle
		model[i], rate[i] = r.Model, r.Rate
		if r.IsDefault {
			isDefault[i] = 1
		}
	}
	if tz[0] == "" {
		for i := range tz {
			tz[i] = "UTC"
		}
	}
	cols := []string{"version", "loaded_at", "source", "currency", "minor_unit", "timezone", "policy", "idle", "model", "is_default", "rate"}
	if err := s.insert(ctx, tablePrices, cols, []any{versions, loadedAt, source, currency, minor, tz, policy, idle, model, isDefault, rate}, n); err != nil {
		return fmt.Errorf("cannot store price book %s: %w", book.Source, err)
	}
	return nil
}
