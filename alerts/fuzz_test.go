package alerts

import (
	"os"
	"testing"
)

// FuzzParse: any input gives a file or an error, never a panic, and a
// parsed file always wraps into a PrometheusRule.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(RulesFile); err == nil {
		f.Add(data)
	}
	f.Add([]byte("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    annotations: {dashboard_url: /d/x}\n"))
	f.Add([]byte("groups: [{name: g, rules: [{record: r, expr: up}]}]"))
	f.Add([]byte("groups:\n- name: g\n  rules:\n  - alert: A\n    record: r\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Parse(data); err != nil {
			return
		}
		if _, err := PrometheusRule(data, Options{GrafanaURL: "http://g"}); err != nil {
			t.Errorf("parsed rules do not wrap: %v", err)
		}
	})
}
