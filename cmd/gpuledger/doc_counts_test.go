package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// numberWords are the counts the docs write in words.
var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
	"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// userDocs are the pages a user reads: the README, docs/, BENCHMARKS.md.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "BENCHMARKS.md"))
	docs := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		// Words wrap across lines.
		docs[strings.TrimPrefix(filepath.ToSlash(n), "../../")] = strings.Join(strings.Fields(string(b)), " ")
	}
	return docs
}

// countsIn finds "<count> <noun>" in text, the count in digits or words,
// and returns each count with its context.
func countsIn(text, noun string) map[string]int {
	re := regexp.MustCompile(`(?i)\b([0-9]+|` + strings.Join(keys(numberWords), "|") + `) (?:Grafana )?` + noun + `\b`)
	out := map[string]int{}
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		word := strings.ToLower(text[m[2]:m[3]])
		n, ok := numberWords[word]
		if !ok {
			n, _ = strconv.Atoi(word)
		}
		out[text[max(0, m[0]-40):min(len(text), m[1]+20)]] = n
	}
	return out
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The counts the docs state (dashboards, alerting and recording rules)
// are the code's: a dashboard or rule added without its page fails here.
func TestDocCountsMatchTheCode(t *testing.T) {
	dashboards, err := filepath.Glob(filepath.Join("..", "..", "dashboards", "json", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	rules := repoFile(t, filepath.Join("alerts", "gpuledger-rules.yaml"))
	alerts := len(regexp.MustCompile(`(?m)^\s*- alert:`).FindAllString(rules, -1))
	records := len(regexp.MustCompile(`(?m)^\s*- record:`).FindAllString(rules, -1))
	if len(dashboards) == 0 || alerts == 0 || records == 0 {
		t.Fatalf("found %d dashboards, %d alerts, %d recording rules", len(dashboards), alerts, records)
	}
	want := map[string]int{"dashboards": len(dashboards), "alerts": alerts, "alerting rules": alerts, "recording rules": records}
	for name, text := range userDocs(t) {
		for noun, n := range want {
			for ctx, got := range countsIn(text, noun) {
				if got != n {
					t.Errorf("%s says %d %s, the code has %d: %q", name, got, noun, n, ctx)
				}
			}
		}
	}
}

// The README's command table lists every command, and no other.
func TestReadmeCommandTableListsEveryCommand(t *testing.T) {
	readme := repoFile(t, "README.md")
	_, table, ok := strings.Cut(readme, "| command | what it does |")
	if !ok {
		t.Fatal("README has no command table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)").FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	for _, c := range commands() {
		if !listed[c.name] {
			t.Errorf("the README's command table lacks %s", c.name)
		}
		delete(listed, c.name)
	}
	for name := range listed {
		t.Errorf("the README's command table lists %s, which is no command", name)
	}
}

// docs/dashboards.md's table names every dashboard that ships, by UID.
func TestDashboardsPageListsEveryDashboard(t *testing.T) {
	page := repoFile(t, filepath.Join("docs", "dashboards.md"))
	files, err := filepath.Glob(filepath.Join("..", "..", "dashboards", "json", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		uid := strings.TrimSuffix(filepath.Base(f), ".json")
		if !regexp.MustCompile("(?m)^\\| .*\\(`" + regexp.QuoteMeta(uid) + "`\\) \\|").MatchString(page) {
			t.Errorf("docs/dashboards.md's table lacks %s", uid)
		}
	}
}

// The Debian packages the integration tests use have one list,
// scripts/deps.sh: make deps and CI both install from it, and make test
// runs the tests through the summary that names what was skipped.
func TestOneDepsListForMakeAndCI(t *testing.T) {
	ci, mk := repoFile(t, filepath.Join(".ci", "run")), repoFile(t, "Makefile")
	if !strings.Contains(ci, "scripts/deps.sh") || strings.Contains(ci, "apt-get") {
		t.Error(".ci/run does not install through scripts/deps.sh alone")
	}
	if !regexp.MustCompile(`(?m)^deps:\n\tscripts/deps.sh$`).MatchString(mk) {
		t.Error("make deps does not run scripts/deps.sh")
	}
	if !regexp.MustCompile(`(?m)^unit:.*\n(\t.*\n)*\t.*bin/testsummary .*\$\(PKGS\)`).MatchString(mk) {
		t.Error("make unit does not run the tests through internal/testsummary")
	}
	list := repoFile(t, filepath.Join("scripts", "deps.sh"))
	for _, pkg := range []string{"clickhouse-server", "prometheus", "chromium", "zookeeper", "buildah", "podman", "debootstrap", "etcd-server"} {
		if !strings.Contains(list, pkg) {
			t.Errorf("scripts/deps.sh lacks %s", pkg)
		}
	}
}
