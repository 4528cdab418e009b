package web

import (
	"bytes"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
)

// servedPages are serve's pages of the test ledger: the months, a
// month's report and advice, the glossary, an error page and a month's drill-down.
var servedPages = []string{"/", "/reports/2026-10", "/reports/2026-11", "/advice/2026-10", "/glossary", "/reports/2025-01", "/no/such/page", "/explore?window=2026-10"}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// Behind a path prefix (a proxy sending /gpu/… to serve with the prefix
// stripped) every page carries the same header, and every link of every
// page, resolved as a browser resolves it, stays under the prefix and
// answers: nothing links to the absolute root.
func TestEveryLinkWorksBehindAPrefix(t *testing.T) {
	db, prices := testLedger(t)
	s, err := New(Config{Open: fileOpener(db), Prices: BookFile(prices), Now: func() time.Time { return testNow }, AdviceRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mux := http.NewServeMux()
	mux.Handle("/gpu/", http.StripPrefix("/gpu", s.Handler()))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	checked := map[string]int{}
	for _, p := range servedPages {
		page, _ := url.Parse(hs.URL + "/gpu" + p)
		resp, body := fetch(t, page.String())
		if strings.HasPrefix(p, "/reports/2026") || strings.HasPrefix(p, "/advice/") || p == "/" || p == "/glossary" {
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d", p, resp.StatusCode)
			}
		}
		if n := strings.Count(body, `<nav class="site"`); n != 1 {
			t.Errorf("%s: %d headers, want 1", p, n)
		}
		for _, want := range []string{">All months</a>", ">Glossary</a>"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the header lacks %q", p, want)
			}
		}
		if strings.HasPrefix(p, "/reports/2026") || strings.HasPrefix(p, "/advice/") {
			month := p[strings.LastIndex(p, "/")+1:]
			for _, want := range []string{">Report</a>", ">Advice</a>", month + ".csv", month + ".json", month + ".focus.csv", ">October 2026</a>", ">November 2026</a>"} {
				if !strings.Contains(body, want) {
					t.Errorf("%s: the header lacks %q", p, want)
				}
			}
		}
		for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
			href := html.UnescapeString(m[1])
			if strings.HasPrefix(href, "/") || strings.Contains(href, "://") {
				t.Errorf("%s: link %q is not relative", p, href)
				continue
			}
			u, err := page.Parse(href)
			if err != nil {
				t.Errorf("%s: link %q: %v", p, href, err)
				continue
			}
			u.Fragment = ""
			if !strings.HasPrefix(u.Path, "/gpu/") {
				t.Errorf("%s: link %q leads to %s, out of the prefix", p, href, u.Path)
				continue
			}
			if _, ok := checked[u.String()]; !ok {
				r, _ := fetch(t, u.String())
				checked[u.String()] = r.StatusCode
			}
			if code := checked[u.String()]; code != 200 {
				t.Errorf("%s: link %q (%s) answers %d", p, href, u.Path, code)
			}
		}
	}
	if len(checked) < 12 {
		t.Errorf("only %d links followed: %v", len(checked), checked)
	}
}

// The report page serve sends is the report file `gpuledger report`
// writes, with serve's header and nothing else: the file itself carries
// no header and no link out of the page.
func TestReportPageIsTheFileWithTheHeader(t *testing.T) {
	db, prices := testLedger(t)
	hs := newTestServer(t, fileOpener(db), prices)
	_, page := fetch(t, hs.URL+"/reports/2026-10")
	file := WithoutNav([]byte(page))
	if bytes.Contains(file, []byte(`<nav class="site"`)) || bytes.Equal(file, []byte(page)) {
		t.Fatal("WithoutNav left the header, or there was none")
	}
	for _, m := range hrefRE.FindAllSubmatch(file, -1) {
		if !bytes.HasPrefix(m[1], []byte("#")) {
			t.Errorf("the report file links out of itself: %s", m[1])
		}
	}
}

// visibleText is a page's text as a reader sees it.
func visibleText(page string) string {
	page = regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(page, " ")
	page = regexp.MustCompile(`(?s)<title>.*?</title>`).ReplaceAllString(page, " ")
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " "))
}

// No page finance reads names a CSV column (allocated_gpu_hours,
// line_type, …) or another contract value (idle_share, idle_allocation):
// those belong to the CSV's own documentation; pages say the glossary's
// words. With idle: shared, so the share of unused capacity shows.
func TestPagesUseTheGlossarysWords(t *testing.T) {
	db, prices := testLedger(t)
	if err := os.WriteFile(prices, []byte(strings.Replace(testBook, "idle: platform", "idle: shared", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	hs := newTestServer(t, fileOpener(db), prices)
	for _, p := range servedPages {
		_, body := fetch(t, hs.URL+p)
		text := visibleText(body)
		for _, col := range append(append(append([]string{}, report.CSVHeader...), report.CSVEnergyColumns...), report.CSVPriceBookColumns...) {
			if strings.Contains(col, "_") && strings.Contains(text, col) {
				t.Errorf("%s names the CSV column %s", p, col)
			}
		}
		for _, bad := range report.EngineerTerms(text) {
			t.Errorf("%s: a column name or contract value where the glossary has a word: %q", p, bad)
		}
		for _, bad := range report.AmbiguousTerms(text) {
			t.Errorf("%s: ambiguous term in %q", p, bad)
		}
	}
	_, g := fetch(t, hs.URL+"/glossary")
	for _, e := range report.Glossary() {
		if !strings.Contains(g, `id="`+e.ID+`"`) || !strings.Contains(html.UnescapeString(g), e.Meaning) {
			t.Errorf("the glossary lacks %s", e.Term)
		}
	}
}

// docs/glossary.md is the glossary page's text: each word, and what it
// means, word for word.
func TestGlossaryDocMatchesThePage(t *testing.T) {
	doc, err := os.ReadFile("../docs/glossary.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(doc)), " ")
	for _, e := range report.Glossary() {
		if !strings.Contains(flat, "**"+e.Term+"**") || !strings.Contains(flat, e.Meaning) {
			t.Errorf("docs/glossary.md lacks %q or its meaning %q", e.Term, e.Meaning)
		}
	}
}

func TestRootFor(t *testing.T) {
	for path, want := range map[string]string{"/": "./", "/glossary": "./", "/reports/2026-11": "../", "/reports/2026-11.csv": "../", "/a/b/c": "../../"} {
		if got := RootFor(path); got != want {
			t.Errorf("RootFor(%q) = %q, want %q", path, got, want)
		}
	}
}
