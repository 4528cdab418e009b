package svgchart

import (
	"html/template"
	"strings"
	"testing"
)

// TestElements: each element as written by hand.
func TestElements(t *testing.T) {
	c := New("960", "300.0", `a "b"`, LikeHTMLEscapeString)
	c.Line("grid", N(78), N(948), "0", N(22.04))
	c.Newline()
	c.Rect(Rect{Class: "s1", X: N(1.25), Y: "2", W: "3", H: "4", Title: "t"})
	c.Rect(Rect{Class: "s2", X: "1", Y: "2", W: "3", H: "4", RX: "2"})
	c.Text(Text{Class: "axis", X: "5", Y: "6", Anchor: "end", DY: "4", Body: "9k"})
	c.Text(Text{X: "5", Y: "6", Titled: true, Title: "full name", Body: "full…"})
	c.Text(Text{X: "5", Y: "6", Titled: true})
	want := `<svg class="chart" viewBox="0 0 960 300.0" role="img" aria-label="a &#34;b&#34;" xmlns="http://www.w3.org/2000/svg">` +
		`<line class="grid" x1="78.0" x2="948.0" y1="0" y2="22.0"/>` + "\n" +
		`<rect class="s1" x="1.2" y="2" width="3" height="4"><title>t</title></rect>` +
		`<rect class="s2" x="1" y="2" width="3" height="4" rx="2"><title></title></rect>` +
		`<text class="axis" x="5" y="6" text-anchor="end" dy="4">9k</text>` +
		`<text x="5" y="6"><title>full name</title>full…</text>` +
		`<text x="5" y="6"><title></title></text>` +
		`</svg>`
	if got := string(c.HTML()); got != want {
		t.Errorf("chart:\n got %s\nwant %s", got, want)
	}
}

// TestEscaping: a chart's text is escaped exactly as the page around it
// would escape it: html/template's escaping, or template.HTMLEscapeString.
func TestEscaping(t *testing.T) {
	tmpl := template.Must(template.New("").Parse(`<p title="{{.}}">{{.}}</p>`))
	for _, s := range []string{
		`<script>alert("x")</script>`, "c++ & 'ops'", "nul\x00byte", "bad \xff utf-8", "ĉu ne — ok", "", "a+b=c",
	} {
		var b strings.Builder
		if err := tmpl.Execute(&b, s); err != nil {
			t.Fatal(err)
		}
		page := strings.TrimSuffix(strings.TrimPrefix(b.String(), `<p title="`), "</p>")
		attr, text, _ := strings.Cut(page, `">`)
		for _, c := range []struct {
			e          Escaping
			attr, text string
		}{
			{LikeTemplate, attr, text},
			{LikeHTMLEscapeString, template.HTMLEscapeString(s), template.HTMLEscapeString(s)},
		} {
			ch := New("1", "1", s, c.e)
			ch.Text(Text{X: "0", Y: "0", Body: s})
			got := string(ch.HTML())
			want := `<svg class="chart" viewBox="0 0 1 1" role="img" aria-label="` + c.attr + `" xmlns="` + NS + `"><text x="0" y="0">` + c.text + `</text></svg>`
			if got != want {
				t.Errorf("%q escaped %v:\n got %s\nwant %s", s, c.e, got, want)
			}
		}
	}
}
