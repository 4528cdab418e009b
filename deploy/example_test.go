package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// TestShippedBookIsExample: deploy/prices.yaml is marked example, so its
// placeholder rates are never billed silently; the same book without the
// line is a user's own.
func TestShippedBookIsExample(t *testing.T) {
	b, err := pricebook.Parse(PricesPath, Prices)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Example {
		t.Errorf("%s is not marked example: true", PricesPath)
	}
	own := strings.Replace(string(Prices), "\nexample: true\n", "\n", 1)
	if own == string(Prices) {
		t.Fatalf("%s has no line \"example: true\"", PricesPath)
	}
	if b, err := pricebook.Parse("own.yaml", []byte(own)); err != nil || b.Example {
		t.Errorf("the shipped book without its example line: example %v, %v", b != nil && b.Example, err)
	}
}

// notes renders the chart's NOTES.txt with the given helm arguments:
// helm template does not render NOTES, and helm install --dry-run wants a
// cluster, so a copy of the chart renders it through tpl as a template.
func notes(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gpuledger")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "notes-under-test.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := "notes: {{ tpl (.Files.Get \"files/notes-under-test.txt\") . | toJson }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "notes-under-test.yaml"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, append([]string{"template", "gpuledger", dir, "--namespace", "gpuledger", "--show-only", "templates/notes-under-test.yaml"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Notes string }
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil || doc.Notes == "" {
		t.Fatalf("rendered NOTES: %v\n%s", err, out)
	}
	return doc.Notes
}

// TestNotesSayExamplePrices: installed with its own copy of the example
// book the chart's notes say so first; with the user's book, or a
// ConfigMap of theirs, they do not.
func TestNotesSayExamplePrices(t *testing.T) {
	const mark = "EXAMPLE PRICES: the bill is priced with the chart's example price book"
	if got := notes(t); !strings.HasPrefix(got, mark) {
		t.Errorf("default install: notes do not start with the example prices warning:\n%s", got)
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(own, []byte("currency: EUR\npolicy: allocation\ndefaultRate: 3.00\n# example: true was removed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := filepath.Join(dir, "ex.yaml")
	if err := os.WriteFile(ex, []byte("currency: EUR\npolicy: allocation\ndefaultRate: 3.00\nexample: true # trying it out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--set-file", "prices.book=" + own}, false},
		{[]string{"--set", "prices.existingConfigMap=our-prices"}, false},
		{[]string{"--set-file", "prices.book=" + ex}, true},
	} {
		if got := strings.Contains(notes(t, c.args...), mark); got != c.want {
			t.Errorf("%v: warning shown %v, want %v", c.args, got, c.want)
		}
	}
}
