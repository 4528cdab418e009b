package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/kubetest"
	"github.com/gpuledger/gpuledger/internal/testenv"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse/chtest"
	"github.com/gpuledger/gpuledger/nodelabel"
)

// TestServeNodeLabelsOnRealCluster runs `gpuledger serve --quota` with a
// price book that prices carbon by region against a real kube-apiserver
// and a real ClickHouse ledger. Nodes gpu-a (eu-north-1), gpu-b
// (us-east-1, then relabelled ap-south-1), gpu-c (no region) and gpu-d
// (us-east-1, then deleted from the cluster) are recorded; the deleted
// node keeps its region. Each node ran one GPU for an hour this month:
//
//	gpu-a  team a  1 kWh x  30 (eu-north-1)                =   30 g
//	gpu-b  team b  2 kWh x 700 (ap-south-1 at the month's end) = 1400 g
//	gpu-c  team c  1 kWh x 400 (no region: the default)    =  400 g
//	gpu-d  team d  1 kWh x 380 (us-east-1, its last value)  =  380 g
//	total                                                    2210 g
func TestServeNodeLabelsOnRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and ClickHouse")
	}
	h := chtest.Setup()
	t.Cleanup(h.Close)
	h.Require(t)
	c := kubetest.StartT(t, kubetest.Options{})
	ctx := context.Background()
	dsn := h.DSN(t)
	if err := runLedger(ctx, []string{"migrate", "--ledger", dsn}, io.Discard); err != nil {
		t.Fatal(err)
	}
	const key = "topology.kubernetes.io/region"
	kubectlT(t, c, strings.NewReader(`
apiVersion: v1
kind: Node
metadata: {name: gpu-a, labels: {topology.kubernetes.io/region: eu-north-1}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-b, labels: {topology.kubernetes.io/region: us-east-1}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-c}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-d, labels: {topology.kubernetes.io/region: us-east-1}}
`), "apply", "-f", "-")

	// An hour of each node's GPU at the start of this month.
	start := time.Now().UTC()
	start = time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for i, n := range []struct {
		node, team string
		joules     float64
	}{{"gpu-a", "a", 3.6e6}, {"gpu-b", "b", 7.2e6}, {"gpu-c", "c", 3.6e6}, {"gpu-d", "d", 3.6e6}} {
		base := attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Hour), Node: n.node,
			GPUUUID: fmt.Sprintf("GPU-%d", i), SliceID: fmt.Sprintf("GPU-%d", i), GPUModel: "A100-SXM4-80GB",
			SharingMode: "exclusive", Method: "measured"}
		ct := base
		ct.Kind, ct.Namespace, ct.Pod, ct.PodUID, ct.Container, ct.Team = attribution.KindContainer, "ns-"+n.team, "p", "u-"+n.team, "c", n.team
		ct.AllocatedGPUSeconds, ct.UsedGPUSeconds, ct.EnergyJoules = 3600, 3600, n.joules
		un, idle := base, base
		un.Kind, idle.Kind = attribution.KindUnallocated, attribution.KindIdle
		rows = append(rows, ct, un, idle)
	}
	st, err := ledger.Open(ctx, dsn, storeOpeners)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, c.Admin); err != nil {
		t.Fatal(err)
	}
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(prices, []byte(`currency: USD
policy: allocation
defaultRate: 2.00
energy:
  carbonIntensity: 400
  carbonIntensityByNodeLabel:
    label: topology.kubernetes.io/region
    intensities: {eu-north-1: 30, us-east-1: 380, ap-south-1: 700}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- run(sctx, []string{"serve", "--ledger", dsn, "--prices", prices, "--listen", addr,
			"--quota", "--quota-interval", "10s", "--kubeconfig", kubeconfig, "--advice-refresh", "0"}, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30 s of its context ending")
		}
	})
	base := "http://" + addr
	waitRecorded := func(n int) {
		t.Helper()
		want := fmt.Sprintf("gpuledger_node_label_changes_recorded_total %d\n", n)
		testenv.Eventually(t, time.Minute, func() error {
			code, body := getBodyErr(base + "/metrics")
			if code != 200 || !strings.Contains(body, want) {
				return fmt.Errorf("/metrics (%d) lacks %q", code, want)
			}
			return nil
		})
	}
	waitRecorded(3) // gpu-a, gpu-b and gpu-d; gpu-c has no region
	kubectlT(t, c, nil, "label", "node", "gpu-b", key+"=ap-south-1", "--overwrite")
	waitRecorded(4)
	// gpu-d deleted, then gpu-e created: the record that sees gpu-e sees
	// gpu-d gone, and records gpu-e alone.
	kubectlT(t, c, nil, "delete", "node", "gpu-d")
	kubectlT(t, c, strings.NewReader("apiVersion: v1\nkind: Node\nmetadata: {name: gpu-e, labels: {topology.kubernetes.io/region: eu-north-1}}\n"), "apply", "-f", "-")
	waitRecorded(5)

	got, err := st.(nodelabel.Store).NodeLabels(ctx, key, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"gpu-a": "eu-north-1", "gpu-b": "ap-south-1", "gpu-d": "us-east-1", "gpu-e": "eu-north-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the ledger's regions: %v, want %v", got, want)
	}

	month := start.Format("2006-01")
	code, page := getBodyErr(base + "/reports/" + month + ".json")
	if code != 200 {
		t.Fatalf("/reports/%s.json: %d\n%s", month, code, page)
	}
	var rep struct {
		Teams []struct {
			Team   string      `json:"team"`
			Co2eKg json.Number `json:"co2e_kg"`
		} `json:"teams"`
		Energy struct {
			Co2eKg     json.Number `json:"co2e_kg"`
			Label      string      `json:"carbon_node_label"`
			Unlabelled *int        `json:"nodes_without_recorded_label"`
		} `json:"energy"`
	}
	if err := json.Unmarshal([]byte(page), &rep); err != nil {
		t.Fatalf("%v\n%.2000s", err, page)
	}
	teams := map[string]string{}
	for _, tm := range rep.Teams {
		teams[tm.Team] = tm.Co2eKg.String()
	}
	if want := map[string]string{"a": "0.030", "b": "1.400", "c": "0.400", "d": "0.380"}; !reflect.DeepEqual(teams, want) {
		t.Errorf("teams' kgCO2e %v, want %v", teams, want)
	}
	if rep.Energy.Co2eKg != "2.210" || rep.Energy.Label != key || rep.Energy.Unlabelled == nil || *rep.Energy.Unlabelled != 1 {
		t.Errorf("energy section %+v (unlabelled %v), want 2.210 kg and 1 node without a region", rep.Energy, rep.Energy.Unlabelled)
	}
}
