package kube

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/internal/kubetest"
)

// chartDir and allFeatures are the chart and its every-option values file,
// relative to this package's directory.
const (
	chartDir    = "../../deploy/helm/gpuledger"
	allFeatures = "../../deploy/testdata/all-features.yaml"
)

// TestChartAllFeaturesOnRealAPIServer renders the chart with every optional
// feature on (the ledger migration hook Job, the report CronJob and its
// PVC, the ClickHouse Secret, dashboards in another namespace, serve's
// NetworkPolicy and PodDisruptionBudget) and has the
// real API server validate each object with a server-side dry run, after
// the default install (so its namespace exists). Nothing is changed.
func TestChartAllFeaturesOnRealAPIServer(t *testing.T) {
	c, _, _ := cluster(t)
	install(t)
	helm := helmBin(t)
	var stdout, stderr bytes.Buffer
	// Its own namespace: the default install's Jobs have the same names,
	// and a Job's pod template cannot change.
	cmd := exec.Command(helm, "template", "gpuledger", chartDir, "--namespace", "gpuledger-all", "-f", allFeatures)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	objs, err := decodeObjects("helm template -f all-features.yaml", stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	served, err := servedAPIs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var check []object
	kinds := map[string]bool{}
	for _, o := range objs {
		if !served[o.GetAPIVersion()] {
			t.Logf("not checked, its API %s is not installed here: %s", o.GetAPIVersion(), o)
			continue
		}
		check = append(check, o)
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"Job", "CronJob", "PersistentVolumeClaim", "Secret", "DaemonSet", "NetworkPolicy", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("the all-features rendering has no %s", k)
		}
	}
	if err := apply(ctx, t, c, check, true); err != nil {
		t.Fatal(err)
	}
}

// helmBin is the pinned helm (scripts/tools.sh builds it once into the
// tools cache), or $GPULEDGER_HELM. Without it the test skips, or fails
// when GPULEDGER_REQUIRE_INTEGRATION=1.
func helmBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GPULEDGER_HELM"); p != "" {
		return p
	}
	var stderr bytes.Buffer
	cmd := exec.Command("../../scripts/tools.sh", "helm")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if os.Getenv(kubetest.EnvRequire) == "1" {
			t.Fatalf("helm unavailable and %s=1: %v\n%s", kubetest.EnvRequire, err, stderr.String())
		}
		t.Skipf("helm unavailable: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
