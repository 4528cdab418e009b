package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/billing/report"
)

// What a dashboard shows people (titles, descriptions, legends, column
// names) uses the report's vocabulary: held but unused, never allocated,
// idle device time; never a bare "idle" or "unallocated".
func TestDashboardTextUsesOneIdleVocabulary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("json", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		for _, text := range shownText(doc) {
			seen++
			for _, bad := range report.AmbiguousTerms(text) {
				t.Errorf("%s: %q", filepath.Base(f), bad)
			}
		}
	}
	if seen < 50 {
		t.Errorf("only %d texts found: the walk misses the dashboards' shape", seen)
	}
}

// shownText collects the strings Grafana shows: titles, descriptions,
// legend formats and the column names of renameByName transformations.
func shownText(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			switch k {
			case "title", "description", "legendFormat":
				if s, ok := child.(string); ok {
					out = append(out, s)
					continue
				}
			case "renameByName":
				if m, ok := child.(map[string]any); ok {
					for _, name := range m {
						if s, ok := name.(string); ok {
							out = append(out, s)
						}
					}
					continue
				}
			}
			out = append(out, shownText(child)...)
		}
	case []any:
		for _, child := range x {
			out = append(out, shownText(child)...)
		}
	}
	return out
}
