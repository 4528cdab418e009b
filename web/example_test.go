package web

import (
	"os"
	"strings"
	"testing"
)

// TestExamplePricesOnEveryPage: served with a book marked example, every
// page carries the banner and every file its mark; with the user's own
// book (the same rates) none of them does.
func TestExamplePricesOnEveryPage(t *testing.T) {
	db, prices := testLedger(t)
	own := newTestServer(t, fileOpener(db), prices)
	if err := os.WriteFile(prices+".example", []byte(testBook+"example: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := newTestServer(t, fileOpener(db), prices+".example")
	// First thing under serve's header.
	banner := `</nav>
<p id="example-prices" role="note"`
	marks := map[string]string{
		"/":                          banner,
		"/reports/2026-10":           banner,
		"/reports/2026-11":           banner,
		"/advice/2026-10":            banner,
		"/reports/2026-10.csv":       "\n# example_prices true ",
		"/reports/2026-10.json":      `"example_prices": true`,
		"/reports/2026-10.focus.csv": ",x_ExamplePrices,",
	}
	for path, mark := range marks {
		resp, body := fetch(t, ex.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(body, mark) {
			t.Errorf("example book: %s (%d) lacks %q", path, resp.StatusCode, mark)
		}
		resp, body = fetch(t, own.URL+path)
		if resp.StatusCode != 200 || strings.Contains(body, "example-prices") || strings.Contains(body, "example_prices") ||
			strings.Contains(body, "ExamplePrices") {
			t.Errorf("user's book: %s (%d) carries an example mark", path, resp.StatusCode)
		}
	}
}
