package pricebook

// fieldExample marks a book as an example: the shipped deploy/prices.yaml
// says `example: true`, and every bill it prices says so (docs/report.md,
// "Example prices"). A field, not the shipped file's SHA-256: a copy with
// a comment or one rate edited is still mostly example rates and keeps the
// mark until someone removes the line on purpose, whereas a hash match
// would drop the mark at the first edited byte.
const fieldExample = "example"

// example reads the example field: true or false, nothing else (a typo
// such as "yes" or "ture" must not pass for either).
func (p *parser) example(e *entry) bool {
	if e == nil {
		return false
	}
	s, ok := p.scalar(e, fieldExample)
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	p.addf(e.value, fieldExample, "%q: want true or false", s)
	return false
}
