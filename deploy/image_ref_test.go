package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// makeImageRef is the image reference `make image` tags: its -t argument,
// read from make's dry run so that the Makefile's own expansion is what is
// checked.
func makeImageRef(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv(requireIntegration) != "" {
			t.Fatalf("make not installed and %s is set", requireIntegration)
		}
		t.Skip("make not installed")
	}
	cmd := exec.Command("make", "-n", "-s", "image")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n image: %v", err)
	}
	m := regexp.MustCompile(` -t (\S+) `).FindSubmatch(out)
	if m == nil {
		t.Fatalf("make -n image tags nothing:\n%s", out)
	}
	return string(m[1])
}

// TestDefaultImageIsMakeImage: the chart's default image is the one
// `make image` builds: values.yaml's repository and tag (the tag empty
// meaning Chart.yaml's appVersion), and what the default rendering runs.
func TestDefaultImageIsMakeImage(t *testing.T) {
	ref := makeImageRef(t)
	var values struct {
		Image struct{ Repository, Tag, Digest string }
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	for path, into := range map[string]any{chartDir + "/values.yaml": &values, chartDir + "/Chart.yaml": &chart} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if values.Image.Digest != "" {
		t.Errorf("values.yaml pins image.digest %q: make image builds a tag", values.Image.Digest)
	}
	if want := values.Image.Repository + ":" + tag; ref != want || tag == "" {
		t.Errorf("make image tags %q; the chart's default image is %q (values.yaml image.repository, image.tag or Chart.yaml appVersion)", ref, want)
	}
	ds := only[*appsv1.DaemonSet](t, render(t))
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != ref {
		t.Errorf("the default rendering runs %q, make image builds %q", got, ref)
	}
}
