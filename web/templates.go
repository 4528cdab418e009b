package web

import (
	_ "embed"
	"html/template"
)

var (
	//go:embed index.html.tmpl
	indexHTML string
	//go:embed error.html.tmpl
	errorHTML string

	indexTemplate = template.Must(template.New("index").Parse(indexHTML))
	errorTemplate = template.Must(template.New("error").Parse(errorHTML))
)
