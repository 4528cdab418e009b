package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yaml.v3 reports type mismatches and unknown fields by line only. These
// helpers find the field path at that line so that such errors name the
// field like every other validation error.

var (
	unknownFieldRE = regexp.MustCompile("^line ([0-9]+): field (.*) not found in type (.*)$")
	typeMismatchRE = regexp.MustCompile("^line ([0-9]+): cannot unmarshal !!([a-z]+)(?: `(.*)`)? into (.*)$")
	duplicateKeyRE = regexp.MustCompile(`^line ([0-9]+): mapping key "(.*)" already defined at line ([0-9]+)$`)
)

// located is one node of the document with the path leading to it.
type located struct {
	path  string
	node  *yaml.Node
	isKey bool
}

func explainYAML(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("cannot parse YAML: %w", err)
	}
	var doc yaml.Node
	if uerr := yaml.Unmarshal(data, &doc); uerr != nil {
		return fmt.Errorf("cannot parse YAML: %w", err)
	}
	var all []located
	walk(&doc, "", &all, 0)
	var p problems
	for _, msg := range te.Errors {
		p.add(explainOne(msg, all))
	}
	return p.err()
}

// maxWalkDepth bounds the recursion on pathological nesting; yaml.v3 itself
// refuses documents nested far deeper than any scenario.
const maxWalkDepth = 64

func walk(n *yaml.Node, path string, out *[]located, depth int) {
	if depth > maxWalkDepth {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, path, out, depth+1)
		}
	case yaml.MappingNode:
		*out = append(*out, located{path: path, node: n})
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := field(path, k.Value)
			*out = append(*out, located{path: p, node: k, isKey: true})
			walk(v, p, out, depth+1)
		}
	case yaml.SequenceNode:
		*out = append(*out, located{path: path, node: n})
		for i, c := range n.Content {
			walk(c, index(path, i), out, depth+1)
		}
	default:
		// Aliases are not followed: the error, if any, is reported where
		// yaml.v3 found it, which is the anchored node.
		*out = append(*out, located{path: path, node: n})
	}
}

func explainOne(msg string, all []located) error {
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		path := findKey(all, line, m[2])
		return &FieldError{Path: path, Problem: fmt.Sprintf("unknown field %q (line %d)", m[2], line)}
	}
	if m := duplicateKeyRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		path := findKey(all, line, m[2])
		return &FieldError{Path: path, Problem: fmt.Sprintf("%q given twice (lines %s and %d)", m[2], m[3], line)}
	}
	if m := typeMismatchRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		path := findValue(all, line, m[2], m[3])
		what := "a " + m[2]
		if m[3] != "" {
			what = fmt.Sprintf("%s %q", m[2], m[3])
		}
		return &FieldError{Path: path, Problem: fmt.Sprintf("%s (line %d) cannot be read as %s", what, line, goTypeName(m[4]))}
	}
	return errors.New(msg)
}

func findKey(all []located, line int, name string) string {
	for _, l := range all {
		if l.isKey && l.node.Line == line && l.node.Value == name {
			return l.path
		}
	}
	return fmt.Sprintf("(line %d)", line)
}

// findValue finds the value node yaml.v3 complained about. It shortens
// values longer than ten characters to seven and "...", hence the prefix.
func findValue(all []located, line int, tag, value string) string {
	prefix, truncated := strings.CutSuffix(value, "...")
	for _, l := range all {
		if l.isKey || l.node.Line != line {
			continue
		}
		switch l.node.Kind {
		case yaml.MappingNode:
			if tag == "map" {
				return l.path
			}
		case yaml.SequenceNode:
			if tag == "seq" {
				return l.path
			}
		default:
			if l.node.Value == value || (truncated && strings.HasPrefix(l.node.Value, prefix)) {
				return l.path
			}
		}
	}
	return fmt.Sprintf("(line %d)", line)
}

// goTypeName turns the Go type yaml.v3 names into words a scenario author
// understands.
func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || t == "*int64":
		return "an integer"
	case strings.HasPrefix(t, "float") || t == "*float64":
		return "a number"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "map["):
		return "a mapping of strings"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	default:
		return "a mapping"
	}
}
