package report

import (
	"html/template"
	"strings"
)

// The report page's stylesheet and Content-Security-Policy, for the other
// pages that must look like it and be as locked down (the advice, the
// pages of gpuledger serve). They are read out of the one report template
// at start, so there is one copy to edit.
var (
	pageStyle = between(htmlTemplate, "<style>\n", "</style>")
	pageCSP   = between(htmlTemplate, `http-equiv="Content-Security-Policy" content="`, `"`)
)

// Stylesheet is the CSS of the report page (without the <style> tags).
func Stylesheet() template.CSS { return template.CSS(pageStyle) }

// ContentSecurityPolicy is the policy the report page declares: nothing
// fetched, no script, inline styles and data: images only. Servers send it
// as a header too.
func ContentSecurityPolicy() string { return pageCSP }

func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		panic("report template: no " + open)
	}
	in, _, ok := strings.Cut(rest, close)
	if !ok {
		panic("report template: no " + close + " after " + open)
	}
	return in
}
