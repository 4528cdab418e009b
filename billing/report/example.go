package report

import (
	"html/template"
	"slices"
	"strings"
)

// A bill priced with the example price book (pricebook.Book.Example, the
// shipped deploy/prices.yaml) says so in every format, so that its
// placeholder rates are never read as the platform's prices
// (docs/report.md, "Example prices"). A bill priced by books none of
// which is an example is written exactly as before.

// ExampleNote is the mark's text. It has no comma or quote, so that the
// CSV record holding it is written unquoted and starts with '#'.
const ExampleNote = "priced with the example price book shipped with gpuledger (example: true) and not with your rates; set your own price book (docs/report.md)"

// csvExamplePrefix starts the finance CSV's example record, after the
// coverage records and as wide as the header, like them (csvGapRecords).
const csvExamplePrefix = "# example_prices"

// focusExampleColumn is the FOCUS x_ column that is true on every row of
// a bill priced, in whole or part, with an example book.
const focusExampleColumn = "x_ExamplePrices"

// ExamplePrices reports whether an example book priced any part of the
// period: the command line's book, or one recorded in the ledger that was
// in force in part of it.
func (r *Report) ExamplePrices() bool {
	if r.Book != nil && r.Book.Example {
		return true
	}
	return slices.ContainsFunc(r.PriceBooks, func(p *PricedBy) bool { return p.Example })
}

// csvExampleRecords is the example record of a header width wide, or
// nothing for a bill priced with the user's own books.
func csvExampleRecords(r *Report, width int) [][]string {
	if !r.ExamplePrices() {
		return nil
	}
	row := make([]string, width)
	row[0] = csvExamplePrefix + " true " + ExampleNote
	return [][]string{row}
}

// withExampleColumn adds focusExampleColumn, in its alphabetical place
// among the x_ columns, to the header and to every row ("true"), for a
// bill with example prices; otherwise it returns both as they are.
func withExampleColumn(r *Report, header []string, rows [][]string) ([]string, [][]string) {
	if !r.ExamplePrices() {
		return header, rows
	}
	i := slices.IndexFunc(header, func(c string) bool { return strings.HasPrefix(c, "x_") && c > focusExampleColumn })
	if i < 0 {
		i = len(header)
	}
	header = slices.Insert(slices.Clone(header), i, focusExampleColumn)
	for k, row := range rows {
		rows[k] = slices.Insert(row, i, "true")
	}
	return header, rows
}

// exampleBannerHTML is the banner on top of the report page and of every
// page of gpuledger serve. Its style is inline so that a page without it
// keeps its stylesheet byte for byte.
const exampleBannerHTML = `<p id="example-prices" role="note" style="margin:0 0 18px;padding:10px 14px;border:1px solid #e0b56b;border-radius:8px;background:#fbf3e6;color:#8a5212;font-weight:600">` +
	`Example prices: this bill is priced with the example price book shipped with gpuledger (<code>example: true</code>), not with your rates. Set your own price book (docs/report.md).</p>
`

// ExampleBanner is the banner for a page of a bill with example prices
// (Report.ExamplePrices), or nothing. It ends in a newline, to stand on
// its own line right after <main>.
func ExampleBanner(example bool) template.HTML {
	if !example {
		return ""
	}
	return template.HTML(exampleBannerHTML)
}
