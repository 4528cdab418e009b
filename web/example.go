package web

import (
	"bytes"
	"html/template"

	"github.com/gpuledger/gpuledger/billing/report"
)

// Every page of a bill priced with an example price book carries the
// report's "example prices" banner (report.ExampleBanner): the month's
// report has it from the report itself, the index and the advice page
// from here.

// mainOpen is where a page's content starts: the banner goes right after.
var mainOpen = []byte("<main>\n")

// withExampleBanner is page with the banner after its <main>, for a bill
// with example prices; otherwise page as it is.
func withExampleBanner(page []byte, example bool) []byte {
	banner := report.ExampleBanner(example)
	i := bytes.Index(page, mainOpen)
	if banner == "" || i < 0 {
		return page
	}
	at := i + len(mainOpen)
	out := make([]byte, 0, len(page)+len(banner))
	out = append(append(append(out, page[:at]...), banner...), page[at:]...)
	return out
}

// indexExample is the index's banner: the served book is an example, or
// an example book priced one of the months listed.
func indexExample(exampleBook bool, bills []monthBill) template.HTML {
	example := exampleBook
	for _, b := range bills {
		example = example || (b.rep != nil && b.rep.ExamplePrices())
	}
	return report.ExampleBanner(example)
}
