package clickhouse

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

const testBook = `currency: JPY
timezone: UTC
policy: usage
idle: shared
rates:
  A100-SXM4-80GB: 350.5
  H100-SXM5-80GB: "600"
defaultRate: 0.000000000001
`

// WritePrices stores every rate as its exact text under one new version;
// the newest version is the book in force.
func TestWritePrices(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	shipped, err := pricebook.Parse("prices.yaml", []byte(strings.Replace(testBook, "350.5", "1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse("prices.yaml", []byte(testBook))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WritePrices(ctx, pricesOf(shipped), time.Unix(100, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.WritePrices(ctx, pricesOf(book), time.Unix(200, 0)); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = s.query(ctx, "read prices", `SELECT concat(currency, ' ', toString(minor_unit), ' ', policy, ' ', idle, ' ', timezone, ' ', model, ' ', toString(is_default), ' ', rate,
		' ', toString(toDecimal128(rate, 12)))
		FROM `+s.table(tablePrices)+` WHERE version = (SELECT max(version) FROM `+s.table(tablePrices)+`) ORDER BY model`, func(rs driver.Rows) error {
		var line string
		if err := rs.Scan(&line); err != nil {
			return err
		}
		got = append(got, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"JPY 0 usage shared UTC  1 0.000000000001 0.000000000001",
		"JPY 0 usage shared UTC A100-SXM4-80GB 0 350.5 350.500000000000",
		"JPY 0 usage shared UTC H100-SXM5-80GB 0 600 600.000000000000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("newest prices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Rates the dashboards' Decimal128(12) SQL cannot carry exactly are
// refused, naming the rate, before anything is written.
func TestPriceRowsRefusesInexactRates(t *testing.T) {
	for rate, want := range map[string]string{
		"0.0000000000001": "more than 12 decimals",
		"1234567890":      "more than 9 integer digits",
	} {
		book, err := pricebook.Parse("prices.yaml", []byte(strings.Replace(testBook, "350.5", rate, 1)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = PriceRows(pricesOf(book))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "A100-SXM4-80GB") {
			t.Errorf("rate %s: err %v, want %q", rate, err, want)
		}
	}
	if _, err := PriceRows(nil); err == nil {
		t.Error("no error for a nil book")
	}
}

// The dashboards price hours by a rate, used or held: a flat book (no
// rates) or a memory-weighted one would show wrong money, so they are
// refused when stored, naming why.
func TestPriceRowsRefusesBooksTheDashboardsCannotPrice(t *testing.T) {
	for name, text := range map[string]string{
		"flat":           "currency: USD\ntimezone: UTC\npolicy: flat\nslotRates:\n  A100-SXM4-80GB: 800\n",
		"memoryWeighted": "currency: USD\ntimezone: UTC\npolicy: usage\nmemoryWeight: 0.3\nrates:\n  A100-SXM4-80GB: 2.40\ndefaultRate: 2.00\n",
	} {
		book, err := pricebook.Parse(name+".yaml", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := PriceRows(pricesOf(book)); err == nil || !strings.Contains(err.Error(), "not priced by the ClickHouse dashboards") {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		}
	}
}

// pricesOf is a book as the store's caller (cmd/gpuledger) hands it over:
// the store does not import the price book.
func pricesOf(book *pricebook.Book) *Prices {
	if book == nil {
		return nil
	}
	p := &Prices{Source: book.Source, Currency: book.Currency.Code, MinorUnit: book.Currency.MinorUnit,
		Timezone: book.Timezone, Policy: string(book.Policy), Idle: string(book.Idle), MemoryWeighted: book.MemoryWeighted(),
		Rates: make(map[string]string, len(book.Rates)), DefaultRate: book.DefaultRate.Format(0)}
	for m, r := range book.Rates {
		p.Rates[m] = r.Format(0)
	}
	return p
}
