package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func TestMetadata(t *testing.T) {
	sc := baseScenario(scenario.ModeTimeslicing, 20*time.Second)
	sc.Namespaces = []scenario.Namespace{{Name: "team-a", Labels: map[string]string{"team": "search"}}, {Name: "empty"}}
	addPod(sc, "uid-a", "a", 0, 10*time.Second)
	addPod(sc, "uid-b", "b", 5*time.Second, 20*time.Second)
	sc.Pods[1].Annotations = map[string]string{"hami.io/x": "y"}
	sc.Pods[1].Containers = append(sc.Pods[1].Containers, scenario.Container{Name: "side", ID: hexID("side")})
	n := newNode(t, sc)
	ctx := context.Background()

	md, err := n.Metadata().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.NodeLabels["nvidia.com/gpu.product"] != "NVIDIA-A100-SXM4-80GB" || len(md.Namespaces) != 2 || md.Namespaces["team-a"]["team"] != "search" {
		t.Errorf("labels %+v %+v", md.NodeLabels, md.Namespaces)
	}
	if _, ok := md.Namespaces["empty"]; !ok {
		t.Error("namespace without labels missing")
	}
	if len(md.Pods) != 1 || md.Pods[0].UID != "uid-a" || !md.Pods[0].StartTime.Equal(t0) {
		t.Fatalf("pods at start %+v, want a", md.Pods)
	}
	advance(t, n, 11*time.Second)
	md, _ = n.Metadata().Snapshot(ctx)
	if len(md.Pods) != 1 {
		t.Fatalf("pods at 11s %+v, want b", md.Pods)
	}
	b := md.Pods[0]
	if b.Name != "b" || b.Namespace != "team-a" || b.Labels["app"] != "b" || b.Annotations["hami.io/x"] != "y" ||
		!b.StartTime.Equal(t0.Add(5*time.Second)) || len(b.Containers) != 2 ||
		b.Containers[0].Name != "main" || b.Containers[0].ID != hexID("b") || b.Containers[1].Name != "side" || b.Containers[1].ID != hexID("side") {
		t.Errorf("pod b %+v", b)
	}
}

func TestClockAndAdvance(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, 10*time.Second)
	n := newNode(t, sc)
	if !n.Clock().Now().Equal(t0) {
		t.Errorf("clock at start %v", n.Clock().Now())
	}
	advance(t, n, 3*time.Second)
	advance(t, n, 3*time.Second) // standing still is fine
	if !n.Clock().Now().Equal(t0.Add(3 * time.Second)) {
		t.Errorf("clock %v, want start+3s", n.Clock().Now())
	}
	if err := n.Advance(t0.Add(2 * time.Second)); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Errorf("moving back: %v, want an error", err)
	}
}

func TestNewRejectsBadScenarios(t *testing.T) {
	cases := map[string]func(*scenario.Scenario){
		"unknown device": func(sc *scenario.Scenario) {
			addPod(sc, "u", "a", 0, 0, proc1(1, "GPU-missing", 1))
		},
		"unknown model": func(sc *scenario.Scenario) { sc.GPUs[0].Model = "V100" },
		"bad MIG profile": func(sc *scenario.Scenario) {
			sc.GPUs[0].Mode = scenario.ModeMIG
			sc.GPUs[0].MIGInstances = []scenario.MIGInstance{{UUID: mig0, Profile: "big"}}
		},
		"process on a MIG GPU itself": func(sc *scenario.Scenario) {
			sc.GPUs[0].Mode = scenario.ModeMIG
			sc.GPUs[0].MIGInstances = []scenario.MIGInstance{{UUID: mig0, Profile: "7g.80gb"}}
			addPod(sc, "u", "a", 0, 0, proc1(1, gpu0, 1))
		},
		"overlapping busy": func(sc *scenario.Scenario) {
			addPod(sc, "u", "a", 0, 0, proc1(1, gpu0, 1, seg(0, 2*ms, 0.1), seg(ms, 3*ms, 0.1)))
		},
		"zero driver period": func(sc *scenario.Scenario) { sc.DriverSamplePeriod = 0 },
		"duplicate UUID": func(sc *scenario.Scenario) {
			sc.GPUs = append(sc.GPUs, sc.GPUs[0])
		},
	}
	for name, mutate := range cases {
		sc := baseScenario(scenario.ModeExclusive, 10*time.Second)
		mutate(sc)
		n, err := New(context.Background(), sc, Options{})
		if err == nil {
			n.Close()
			t.Errorf("%s: no error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
	if _, err := New(context.Background(), nil, Options{}); err == nil {
		t.Error("nil scenario: no error")
	}
}

func TestCloseRemovesDir(t *testing.T) {
	dir := t.TempDir()
	n, err := New(context.Background(), baseScenario(scenario.ModeExclusive, time.Second), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n.PodResourcesSocket(), dir) || !strings.HasPrefix(n.ProcRoot(), dir) {
		t.Errorf("socket %s / procfs %s not under %s", n.PodResourcesSocket(), n.ProcRoot(), dir)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind %v", entries)
	}
	if err := n.Advance(t0.Add(time.Second)); err == nil {
		t.Error("Advance after Close: no error")
	}
}
