// Package image tests the Dockerfile at the repository root: it builds the
// image with Debian's buildah from base images assembled on this machine (no
// registry is reachable) and runs `gpuledger version` inside it. Users run
// the image with docker or podman; this sandbox forbids `podman run` (it
// cannot set rlimits), so the smoke test runs through `buildah run
// --isolation chroot`, which applies the image's USER.
package image

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	requireIntegration = "GPULEDGER_REQUIRE_INTEGRATION"
	tag                = "localhost/gpuledger:image-test"
	version            = "image-test"
)

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv(requireIntegration) != "" {
				t.Fatalf("%s not installed and %s is set", tool, requireIntegration)
			}
			t.Skipf("%s not installed (apt-get install buildah podman debootstrap)", tool)
		}
	}
	if os.Geteuid() != 0 {
		if os.Getenv(requireIntegration) != "" {
			t.Fatalf("the image build needs root (buildah chroot isolation, debootstrap) and %s is set", requireIntegration)
		}
		t.Skip("the image build needs root (buildah chroot isolation, debootstrap)")
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, lastLines(stdout.String(), 30), lastLines(stderr.String(), 30))
	}
	return stdout.String()
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func goEnv(t *testing.T, name string) string {
	return strings.TrimSpace(run(t, "", "go", "env", name))
}

func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image (minutes the first time)")
	}
	need(t, "buildah", "podman", "debootstrap")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	bases := strings.Fields(run(t, root, "scripts/image-bases.sh"))
	if len(bases) != 2 {
		t.Fatalf("image-bases.sh printed %q", bases)
	}
	t.Logf("base images %v ready in %s", bases, time.Since(start).Round(time.Second))

	// The build reads modules from the host's module cache first (a
	// file:// GOPROXY), then from the host's GOPROXY; Go's build cache
	// lives in the tools cache between runs, so a rebuild is incremental.
	// No layer cache: intermediate images of every source change would
	// pile up in the local store; the image itself is removed at the end.
	tools := os.Getenv("GPULEDGER_TOOLS_DIR") // as scripts/tools.sh and kube-tools.sh
	if tools == "" {
		tools = filepath.Join(goEnv(t, "GOCACHE"), "..", "gpuledger-tools")
	}
	gocache := filepath.Join(tools, "image-gocache")
	if err := os.MkdirAll(gocache, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"bud", "--isolation", "chroot", "--layers=false", "-f", "Dockerfile", "-t", tag,
		"--build-arg", "GO_IMAGE=" + bases[1], "--build-arg", "BASE_IMAGE=" + bases[0],
		"--build-arg", "GOPROXY=file:///goproxy," + goEnv(t, "GOPROXY"),
		"--build-arg", "GOFLAGS=" + goEnv(t, "GOFLAGS"),
		"--build-arg", "GONOSUMDB=" + goEnv(t, "GONOSUMDB"),
		"--build-arg", "VERSION=" + version, "--build-arg", "REVISION=test",
		"--build-arg", "CREATED=" + time.Now().UTC().Format(time.RFC3339),
		"--volume", filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download") + ":/goproxy:ro",
		"--volume", gocache + ":/root/.cache/go-build",
	}
	// A machine whose proxy needs a local CA (this sandbox's) lends it to the build.
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		args = append(args, "--volume", "/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro")
	}
	start = time.Now()
	run(t, root, "buildah", append(args, ".")...)
	defer exec.Command("buildah", "rmi", tag).Run()
	t.Logf("buildah bud: %s", time.Since(start).Round(time.Second))

	// The image's configuration: entrypoint, user, OCI labels.
	var img struct {
		OCIv1 struct {
			Config struct {
				User       string
				Entrypoint []string
				Cmd        []string
				Labels     map[string]string
			} `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(run(t, "", "buildah", "inspect", "--type", "image", tag)), &img); err != nil {
		t.Fatal(err)
	}
	cfg := img.OCIv1.Config
	if strings.Join(cfg.Entrypoint, " ") != "/usr/bin/gpuledger" || strings.Join(cfg.Cmd, " ") != "collect" {
		t.Errorf("entrypoint %q cmd %q", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", cfg.User)
	}
	for _, k := range []string{"title", "description", "source", "licenses", "version", "revision", "created"} {
		if cfg.Labels["org.opencontainers.image."+k] == "" {
			t.Errorf("no OCI label org.opencontainers.image.%s", k)
		}
	}
	if v := cfg.Labels["org.opencontainers.image.version"]; v != version {
		t.Errorf("version label %q", v)
	}

	// Run inside the image, as its user.
	ctr := strings.TrimSpace(run(t, "", "buildah", "from", tag))
	defer exec.Command("buildah", "rm", ctr).Run()
	start = time.Now()
	// buildah's chroot isolation now and then hands back no output from a
	// command that ran and exited 0 (seen under load); an empty answer is
	// asked again, a wrong one still fails.
	in := func(cmd ...string) string {
		var out string
		for try := 1; try <= 3; try++ {
			out = run(t, "", "buildah", append([]string{"run", "--isolation", "chroot", ctr, "--"}, cmd...)...)
			if out != "" {
				break
			}
			t.Logf("%v printed nothing inside the image (try %d)", cmd, try)
		}
		return out
	}
	if got, want := in("/usr/bin/gpuledger", "version"), fmt.Sprintf("gpuledger %s (test)\n", version); got != want {
		t.Errorf("gpuledger version printed %q, want %q", got, want)
	}
	t.Logf("gpuledger version inside the image: %s", time.Since(start).Round(time.Millisecond))
	if got := strings.TrimSpace(in("id", "-u")); got != "65532" {
		t.Errorf("runs as uid %s, want 65532", got)
	}
	if got := strings.Fields(in("stat", "-c", "%u %a", "/var/lib/gpuledger")); len(got) != 2 || got[0] != "65532" {
		t.Errorf("/var/lib/gpuledger owner and mode %v: the non-root user cannot write its data dir", got)
	}
	// The whole collector, cgo and all, runs in the runtime base: a
	// simulated node through `simulate`, which writes the ledger.
	if got := run(t, "", "buildah", "run", "--isolation", "chroot",
		"-v", filepath.Join(root, "testdata", "scenarios", "exclusive-basic")+":/scenario:ro", ctr, "--",
		"/bin/sh", "-c", "gpuledger simulate --scenario /scenario/scenario.yaml --out /tmp/sim >/dev/null 2>&1 && wc -l < /tmp/sim/ledger.csv"); strings.TrimSpace(got) == "" || strings.TrimSpace(got) == "0" {
		t.Errorf("simulate in the image wrote no ledger rows (%q)", got)
	} else {
		t.Logf("simulate in the image: ledger.csv of %s lines", strings.TrimSpace(got))
	}
	// The chart's report CronJob names the previous month with sh and GNU date.
	if got := strings.TrimSpace(in("/bin/sh", "-c", `date -u -d "$(echo 2026-01-01) -1 month" +%Y-%m`)); got != "2025-12" {
		t.Errorf("previous month of 2026-01 is %q in the image", got)
	}
	// The default price book is where docs/install.md says.
	in("test", "-r", "/etc/gpuledger/prices.yaml")
}
