package alerts

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpuledger/gpuledger/dashboards"
	"github.com/gpuledger/gpuledger/internal/testenv"
)

// tool finds an external tool, skipping the test without it (failing when
// GPULEDGER_REQUIRE_INTEGRATION=1).
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		testenv.RequireIntegration(t, fmt.Sprintf("%s not found: %v", name, err), "install Debian's prometheus package")
	}
	return path
}

func loadRules(t *testing.T) (*File, []byte) {
	t.Helper()
	data, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f, data
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := tool(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", RulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", RulesFile, err, out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := tool(t, "promtool")
	files, err := filepath.Glob(filepath.Join("tests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule tests under tests/ (err %v)", err)
	}
	out, err := exec.Command(promtool, append([]string{"test", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// ruleTests is the part of a promtool test file this package checks.
type ruleTests struct {
	Tests []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestEveryRuleIsTested: each alert fires in some promtool test and is
// checked silent on the healthy node; each recording rule is evaluated.
func TestEveryRuleIsTested(t *testing.T) {
	f, _ := loadRules(t)
	files, err := filepath.Glob(filepath.Join("tests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fires, silentWhenHealthy, evaluated := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var rt ruleTests
		if err := yaml.Unmarshal(data, &rt); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, tc := range rt.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else if filepath.Base(file) == "healthy.yaml" {
					silentWhenHealthy[a.Alertname] = true
				}
			}
			for _, e := range tc.PromQLExprTest {
				evaluated[strings.TrimSpace(e.Expr)] = true
			}
		}
	}
	for _, r := range f.Alerts() {
		if !fires[r.Alert] {
			t.Errorf("alert %s never fires in tests/*.yaml", r.Alert)
		}
		if !silentWhenHealthy[r.Alert] {
			t.Errorf("alert %s is not checked silent in tests/healthy.yaml", r.Alert)
		}
	}
	for _, r := range f.Records() {
		if !evaluated[r.Record] {
			t.Errorf("recording rule %s is not evaluated in tests/*.yaml", r.Record)
		}
	}
}

// findingAlerts fire on series that name a container: their description
// must name its pod, namespace and team.
var findingAlerts = map[string]bool{
	"GPULedgerIdleGPUAllocation":             true,
	"GPULedgerNoisyNeighbour":                true,
	"GPULedgerStarvedContainer":              true,
	"GPULedgerMemoryGrowth":                  true,
	"GPULedgerMemoryGrowthOwnMIGInstance":    true,
	"GPULedgerSharedGPUMemoryExhaustionSoon": true,
}

var severities = map[string]bool{"critical": true, "warning": true, "info": true}

const runbookPrefix = "https://github.com/gpuledger/gpuledger/blob/main/docs/alerts.md#"

// TestEveryAlertIsExplained: summary, description, a severity, a runbook
// section that exists, and a dashboard panel that exists.
func TestEveryAlertIsExplained(t *testing.T) {
	f, _ := loadRules(t)
	anchors := runbookAnchors(t)
	panels := dashboardPanels(t)
	seen := map[string]bool{}
	for _, r := range f.Alerts() {
		if seen[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if !severities[r.Labels["severity"]] {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description", "runbook_url", "dashboard_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if findingAlerts[r.Alert] {
			for _, l := range []string{"pod", "namespace", "team"} {
				if !strings.Contains(r.Annotations["description"], "{{ $labels."+l+" }}") {
					t.Errorf("%s: description does not name the %s", r.Alert, l)
				}
			}
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
		if !ok {
			t.Errorf("%s: runbook_url %q is not under %s", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
		} else if !anchors[anchor] {
			t.Errorf("%s: runbook_url anchor #%s is not a heading of docs/alerts.md", r.Alert, anchor)
		}
		checkDashboardURL(t, r.Alert, r.Annotations["dashboard_url"], panels)
	}
}

// checkDashboardURL: the path is a dashboard's, viewPanel one of its panels.
func checkDashboardURL(t *testing.T, alert, raw string, panels map[string]map[int]bool) {
	t.Helper()
	// Templates stay in the query; they are not part of the path.
	u, err := url.Parse(strings.NewReplacer("{{ ", "", " }}", "").Replace(raw))
	if err != nil {
		t.Errorf("%s: dashboard_url %q: %v", alert, raw, err)
		return
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "d" {
		t.Errorf("%s: dashboard_url %q is not /d/<uid>/<slug>", alert, raw)
		return
	}
	if want := dashboards.Path(parts[1]); u.Path != want {
		t.Errorf("%s: dashboard_url path %s, want %s", alert, u.Path, want)
	}
	ids, ok := panels[parts[1]]
	if !ok {
		t.Errorf("%s: dashboard_url names dashboard %s, which does not exist", alert, parts[1])
		return
	}
	id, err := strconv.Atoi(u.Query().Get("viewPanel"))
	if err != nil || !ids[id] {
		t.Errorf("%s: dashboard_url viewPanel %q is not a panel of %s", alert, u.Query().Get("viewPanel"), parts[1])
	}
}

// headingRe matches a markdown heading.
var headingRe = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)

// runbookAnchors are the GitHub anchors of docs/alerts.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(string(data), -1) {
		out[githubAnchor(m[1])] = true
	}
	return out
}

// githubAnchor is GitHub's anchor for a heading: lower case, punctuation
// other than - and _ dropped, spaces as -.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// dashboardPanels are the panel IDs of each committed dashboard by UID.
func dashboardPanels(t *testing.T) map[string]map[int]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "dashboards", "json", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards under ../dashboards/json (err %v)", err)
	}
	out := map[string]map[int]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string `yaml:"uid"`
			Panels []struct {
				ID int `yaml:"id"`
			} `yaml:"panels"`
		}
		// JSON is YAML.
		if err := yaml.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ids := map[int]bool{}
		for _, p := range d.Panels {
			ids[p.ID] = true
		}
		out[d.UID] = ids
	}
	return out
}

func TestGithubAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"GPULedgerIdleGPUAllocation": "gpuledgeridlegpuallocation",
		"Scrape it: honor_labels":    "scrape-it-honor_labels",
		"What it means (and why)":    "what-it-means-and-why",
	} {
		if got := githubAnchor(in); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrometheusRuleUpToDate(t *testing.T) {
	_, rules := loadRules(t)
	want, err := PrometheusRule(rules, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(PrometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("alerts/%s is out of date with alerts/%s: run `make dashboards` (go run ./alerts/cmd/genrules)", PrometheusRuleFile, RulesFile)
	}
}

// promRule is the PrometheusRule's shape.
type promRule struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec File `yaml:"spec"`
}

// TestPrometheusRuleWrapsTheSameGroups compares the committed
// PrometheusRule's groups with the rule file's, field by field.
func TestPrometheusRuleWrapsTheSameGroups(t *testing.T) {
	f, _ := loadRules(t)
	data, err := os.ReadFile(PrometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	var pr promRule
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" {
		t.Errorf("header = %s %s %q, want monitoring.coreos.com/v1 PrometheusRule with a name", pr.APIVersion, pr.Kind, pr.Metadata.Name)
	}
	if !reflect.DeepEqual(pr.Spec.Groups, f.Groups) {
		t.Errorf("PrometheusRule groups differ from %s", RulesFile)
	}
}

func TestPrometheusRuleGrafanaURL(t *testing.T) {
	f, rules := loadRules(t)
	data, err := PrometheusRule(rules, Options{GrafanaURL: "https://grafana.example.org/"})
	if err != nil {
		t.Fatal(err)
	}
	var pr promRule
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	got := pr.Spec.Alerts()
	for i, r := range f.Alerts() {
		want := "https://grafana.example.org" + r.Annotations["dashboard_url"]
		if got[i].Annotations["dashboard_url"] != want {
			t.Errorf("%s: dashboard_url = %q, want %q", r.Alert, got[i].Annotations["dashboard_url"], want)
		}
		if got[i].Annotations["summary"] != r.Annotations["summary"] {
			t.Errorf("%s: summary changed", r.Alert)
		}
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"not yaml":      {"groups: [", "cannot parse rule file"},
		"no groups":     {"groups: []", "no groups"},
		"unknown field": {"groups:\n- name: g\n  rulez: []", "rulez"},
		"nameless":      {"groups:\n- rules: []", "group 1 has no name"},
		"both":          {"groups:\n- name: g\n  rules:\n  - alert: A\n    record: r\n    expr: up", "group g rule 1: needs exactly one"},
		"neither":       {"groups:\n- name: g\n  rules:\n  - expr: up", "group g rule 1: needs exactly one"},
		"no expr":       {"groups:\n- name: g\n  rules:\n  - alert: A", "group g rule A: empty expr"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}
