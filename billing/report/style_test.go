package report

import (
	"strings"
	"testing"
)

// The shared stylesheet and policy are the report page's own.
func TestStylesheetAndPolicyAreTheReportPages(t *testing.T) {
	if css := string(Stylesheet()); !strings.Contains(css, "--accent") || !strings.Contains(css, "svg.chart") || strings.Contains(css, "<") {
		t.Errorf("stylesheet %.200q", css)
	}
	if got := ContentSecurityPolicy(); !strings.HasPrefix(got, "default-src 'none'") || strings.Contains(got, "script") {
		t.Errorf("policy %q", got)
	}
	if !strings.Contains(htmlTemplate, `content="`+ContentSecurityPolicy()+`"`) {
		t.Error("policy is not the page's meta")
	}
}
