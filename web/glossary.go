package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"

	"github.com/gpuledger/gpuledger/billing/report"
)

// glossaryPage is /glossary: the words of the bill (report.Glossary), the
// same text as docs/glossary.md.
type glossaryPage struct {
	Style   template.CSS
	CSP     string
	Entries []report.GlossaryEntry
	Nav     Nav
}

// serveGlossary writes the glossary; it reads no ledger and no book.
func serveGlossary(_ context.Context, w http.ResponseWriter, r *http.Request) error {
	var b bytes.Buffer
	p := glossaryPage{Style: report.Stylesheet(), CSP: report.ContentSecurityPolicy(), Entries: report.Glossary(),
		Nav: NewNav(r.URL.Path, "glossary", "", nil, NavLink{Label: "Glossary"})}
	if err := glossaryTemplate.Execute(&b, p); err != nil {
		return fmt.Errorf("cannot write the glossary page: %w", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
	return nil
}
