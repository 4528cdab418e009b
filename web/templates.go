package web

import (
	_ "embed"
	"html/template"
	"strings"
)

var (
	//go:embed nav.html.tmpl
	navTemplateText string
	//go:embed index.html.tmpl
	indexHTML string
	//go:embed error.html.tmpl
	errorHTML string
	//go:embed glossary.html.tmpl
	glossaryHTML string

	// pageBase holds the partials every page shares: "nav" (a Nav) and
	// "nav-style" (its CSS, for the page's head).
	pageBase = template.Must(template.New("nav.html.tmpl").Parse(navTemplateText))

	// navTemplates execute the partials on their own (serve's header on
	// the report's and the advice's pages): pageBase itself is never
	// executed, so that pageTemplate may clone it at any time.
	navTemplates = template.Must(pageBase.Clone())
	navStyle     = mustNavStyle()

	indexTemplate    = pageTemplate("index", indexHTML)
	errorTemplate    = pageTemplate("error", errorHTML)
	glossaryTemplate = pageTemplate("glossary", glossaryHTML)
)

// pageTemplate parses a page of serve with the shared partials: it
// writes {{template "nav" .Nav}} in its <main> and {{template
// "nav-style"}} in a <style> of its head.
func pageTemplate(name, text string) *template.Template {
	return template.Must(template.Must(pageBase.Clone()).New(name).Parse(text))
}

// NavStyle is the header's CSS (without <style> tags).
func NavStyle() template.CSS { return navStyle }

func mustNavStyle() template.CSS {
	var b strings.Builder
	if err := navTemplates.ExecuteTemplate(&b, "nav-style", nil); err != nil {
		panic("nav template: " + err.Error()) // our own template's text, at start
	}
	return template.CSS(b.String()) //nolint:gosec // our own template's text
}
