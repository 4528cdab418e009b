package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/billing/report"
)

// repoFile reads a file at the repository root.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The repository is licensed Apache-2.0, with the full text beside it.
func TestLicenseIsTheFullApache2Text(t *testing.T) {
	l := repoFile(t, "LICENSE")
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"9. Accepting Warranty or Additional Liability.", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(l, want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
}

// `gpuledger version` prints the tag: the Makefile links git describe's
// answer into main.version, the variable the version command prints.
func TestMakefileLinksGitDescribeIntoVersion(t *testing.T) {
	mk := repoFile(t, "Makefile")
	if !regexp.MustCompile(`(?m)^VERSION\s*\?=\s*\$\(shell git describe --tags`).MatchString(mk) {
		t.Error("Makefile's VERSION is not git describe --tags")
	}
	if !strings.Contains(mk, "-X main.version=$(VERSION)") {
		t.Error("Makefile does not link $(VERSION) into main.version")
	}
}

// The report's documentation uses the vocabulary of the pages it
// documents; contract values are quoted as code, which the check skips.
func TestReportDocsUseOneIdleVocabulary(t *testing.T) {
	doc := repoFile(t, filepath.Join("docs", "report.md"))
	doc = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, " ")
	doc = regexp.MustCompile("`[^`]*`").ReplaceAllString(doc, " ")
	doc = strings.Join(strings.Fields(doc), " ") // terms wrap across lines
	for _, bad := range report.AmbiguousTerms(doc) {
		t.Errorf("docs/report.md: %q", bad)
	}
}
