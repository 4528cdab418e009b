package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const releaseWorkflow = "../.github/workflows/release.yml"

// workflow is the part of a GitHub Actions workflow the release checks
// read. YAML 1.2 (yaml/v3), where the key "on" is a string, as GitHub
// reads it.
type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Permissions map[string]string `yaml:"permissions"`
		Steps       []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestReleaseWorkflow: on a version tag the release builds the image with
// make image, scans it and fails on what the scan finds, and only then
// pushes the image and packages and pushes the chart to an OCI registry.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile(releaseWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(false)
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s: %v", releaseWorkflow, err)
	}
	if !slices.Equal(w.On.Push.Tags, []string{"v*.*.*"}) {
		t.Errorf("on.push.tags = %q, want [v*.*.*]", w.On.Push.Tags)
	}
	job, ok := w.Jobs["release"]
	if !ok || len(w.Jobs) != 1 {
		t.Fatalf("jobs %v, want one job release", w.Jobs)
	}
	if job.Permissions["packages"] != "write" {
		t.Errorf("job permissions %v: pushing to ghcr.io needs packages: write", job.Permissions)
	}
	// Each stage is the index of the first step matching it.
	at := func(what string, match func(i int) bool) int {
		for i := range job.Steps {
			if match(i) {
				return i
			}
		}
		t.Errorf("no step that %s", what)
		return -1
	}
	run := func(s string) func(int) bool {
		return func(i int) bool { return strings.Contains(job.Steps[i].Run, s) }
	}
	build := at("runs make image", run("make image "))
	scan := at("scans with trivy and fails on findings", func(i int) bool {
		s := job.Steps[i]
		return strings.HasPrefix(s.Uses, "aquasecurity/trivy-action@") && s.With["exit-code"] == "1"
	})
	pushImage := at("pushes the image", run("docker push "))
	pkg := at("packages the chart", run("helm package deploy/helm/gpuledger"))
	pushChart := at("pushes the chart to an OCI registry", func(i int) bool {
		return regexp.MustCompile(`helm push \S+ "?(oci://|\$CHART_REPOSITORY)`).MatchString(job.Steps[i].Run)
	})
	if !(build < scan && scan < pushImage && scan < pushChart && pkg <= pushChart && build >= 0) {
		t.Errorf("steps out of order: build %d, scan %d, push image %d, package chart %d, push chart %d", build, scan, pushImage, pkg, pushChart)
	}
	if !strings.Contains(string(b), "CHART_REPOSITORY: oci://") {
		t.Errorf("the chart repository is not an OCI registry")
	}
}

// TestActionlint runs the pinned actionlint (deploy/deploy.mk's
// ACTIONLINT_VERSION, as make actionlint) on the workflows. go run needs
// the module proxy the first time: without it the test skips, unless
// GPULEDGER_REQUIRE_INTEGRATION is set.
func TestActionlint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds actionlint the first time")
	}
	mk, err := os.ReadFile("deploy.mk")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ACTIONLINT_VERSION \?= (v\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("deploy.mk pins no ACTIONLINT_VERSION")
	}
	pkg := "github.com/rhysd/actionlint/cmd/actionlint@" + string(m[1])
	if out, err := exec.Command("go", "run", pkg, "-version").CombinedOutput(); err != nil {
		if os.Getenv(requireIntegration) != "" {
			t.Fatalf("go run %s: %v and %s is set\n%s", pkg, err, requireIntegration, out)
		}
		t.Skipf("actionlint unavailable (go run %s: %v)", pkg, err)
	}
	cmd := exec.Command("go", "run", pkg, ".github/workflows/release.yml")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}
}
