package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// How each format names the price books that priced a report, written
// only when the ledger records books (Report.PriceBooks): a ledger that
// records none writes every file as before.

// CSVPriceBookColumns are appended to the finance CSV (after the energy
// columns, when there are some) when the ledger records price books: the
// first 12 hex digits of the SHA-256 of the book that priced the line, and
// the instant that book took effect. Empty on the rounding line.
var CSVPriceBookColumns = []string{"price_book", "price_book_effective_from"}

// focusPriceBookColumns are the FOCUS export's x_ columns for the same,
// in their alphabetical places.
var focusPriceBookColumns = []string{"x_PriceBook", "x_PriceBookEffectiveFrom"}

// priceBookCells are a line's CSV price book cells.
func priceBookCells(l Line) []string {
	if l.PricedBy == nil {
		return []string{"", ""}
	}
	return []string{l.PricedBy.Short(), l.PricedBy.EffectiveFrom.UTC().Format(time.RFC3339)}
}

type jsonPriceBook struct {
	SHA256        string `json:"sha256"`
	Source        string `json:"source"`
	EffectiveFrom string `json:"effective_from"`
	Recorded      bool   `json:"recorded"`
	// Start and End bound the part of the period the book priced.
	Start string `json:"start"`
	End   string `json:"end"`
}

func priceBooksJSON(r *Report) []jsonPriceBook {
	var out []jsonPriceBook
	for _, p := range r.PriceBooks {
		out = append(out, jsonPriceBook{SHA256: p.SHA256, Source: p.Source, EffectiveFrom: p.EffectiveFrom.UTC().Format(time.RFC3339),
			Recorded: p.Recorded, Start: p.From.Format(time.RFC3339), End: p.To.Format(time.RFC3339)})
	}
	return out
}

func jsonLineBook(l Line) string {
	if l.PricedBy == nil {
		return ""
	}
	return l.PricedBy.Short()
}

// priceBooksHTML are the page's lines naming the books.
func priceBooksHTML(r *Report) []string {
	var out []string
	for _, p := range r.PriceBooks {
		s := fmt.Sprintf("%s (%s, effective %s) from %s to %s", p.Short(), p.Source, p.EffectiveFrom.UTC().Format(time.RFC3339),
			p.From.Format(time.RFC3339), p.To.Format(time.RFC3339))
		if !p.Recorded {
			s += ", not recorded in the ledger"
		}
		out = append(out, s)
	}
	return out
}

// withPriceBookColumns is the FOCUS header h with the price book columns
// when the ledger records books.
func withPriceBookColumns(r *Report, h []string) []string {
	if len(r.PriceBooks) == 0 {
		return h
	}
	h = slices.Clone(h)
	for _, col := range focusPriceBookColumns {
		i := slices.IndexFunc(h, func(c string) bool { return strings.HasPrefix(c, "x_") && c > col })
		if i < 0 {
			i = len(h)
		}
		h = slices.Insert(h, i, col)
	}
	return h
}

func focusPriceBookCells(c map[string]string, l Line) {
	if l.PricedBy != nil {
		c["x_PriceBook"], c["x_PriceBookEffectiveFrom"] = l.PricedBy.Short(), focusTime(l.PricedBy.EffectiveFrom)
	}
}

// focusPieceRows writes a report priced by several books as each part's
// rows, each with its own charge period (the hours its book priced) and
// rounding row, and the whole period's billing period, invoice and
// coverage: the rows' BilledCost still adds up to the report's total.
func focusPieceRows(r *Report, header []string) ([][]string, error) {
	col := map[string]int{}
	for i, c := range header {
		col[c] = i
	}
	start, end := r.DataBounds()
	whole := map[string]string{
		"BillingPeriodStart": focusTime(r.From), "BillingPeriodEnd": focusTime(r.To), "InvoiceId": focusInvoiceID(r),
		"x_DataStart": focusTimeOrNull(start), "x_DataEnd": focusTimeOrNull(end), "x_Partial": fmt.Sprint(r.Partial()),
	}
	var out [][]string
	for _, p := range r.pieces {
		p.FOCUSVersion = r.FOCUSVersion
		rows, err := focusRows(p, header)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			for name, v := range whole {
				if i, ok := col[name]; ok {
					row[i] = v
				}
			}
		}
		out = append(out, rows...)
	}
	return out, nil
}
