package pricebook

import (
	"strings"
	"testing"
)

const exampleBase = "currency: USD\npolicy: allocation\ndefaultRate: 2.00\n"

func TestExampleField(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want bool
	}{
		{exampleBase, false}, // a user's own book names no example
		{exampleBase + "example: true\n", true},
		{exampleBase + "example: false\n", false},
		{"example: true\n" + exampleBase, true},
	} {
		b, err := Parse("p.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if b.Example != c.want {
			t.Errorf("%q: Example = %v, want %v", c.yaml, b.Example, c.want)
		}
	}
}

func TestExampleFieldRejects(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{exampleBase + "example: yes\n", `p.yaml:4: example: "yes": want true or false`},
		{exampleBase + "example: True\n", `p.yaml:4: example: "True": want true or false`},
		{exampleBase + "example:\n", "p.yaml:4: example: empty"},
		{exampleBase + "example: [true]\n", "p.yaml:4: example: want a single value"},
		{exampleBase + "example: true\nexample: false\n", "p.yaml:5: example: given twice (first on line 4)"},
	} {
		_, err := Parse("p.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
}
