package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/internal/groundtruth"
	"github.com/gpuledger/gpuledger/sim/scenario"
	"github.com/gpuledger/gpuledger/tenancy"
)

// memSink keeps everything a simulation produced.
type memSink struct {
	rows     []attribution.Row
	findings []attribution.Finding
}

func (m *memSink) Write(_ context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	m.rows = append(m.rows, rows...)
	m.findings = append(m.findings, fs...)
	return nil
}

// scenarioDirs lists scenario directories (each with scenario.yaml) under the
// reference examples and our own corpus.
func scenarioDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{filepath.Join("..", "..", "testdata", "examples"), filepath.Join("..", "..", "testdata", "scenarios")} {
		m, _ := filepath.Glob(filepath.Join(root, "*", "scenario.yaml"))
		if len(m) == 0 {
			t.Fatalf("no scenarios under %s", root)
		}
		for _, f := range m {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	sort.Strings(dirs)
	return dirs
}

// TestSimulatedScenariosMatchGroundTruth runs the real collector pipeline on
// every scenario and judges it against the independent ground truth
// (internal/groundtruth, which shares no code with attribution).
func TestSimulatedScenariosMatchGroundTruth(t *testing.T) {
	for _, dir := range scenarioDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			truth, err := groundtruth.Compute(sc)
			if err != nil {
				t.Fatal(err)
			}
			expect, forbid := loadTruthFlags(t, dir)
			truth.ExpectFlags = append(truth.ExpectFlags, expect...)
			truth.ForbidFlags = append(truth.ForbidFlags, forbid...)
			var sink memSink
			if err := simulateScenario(context.Background(), sc, simOptions{TeamLabel: "team"}, []collector.Sink{&sink}, nil); err != nil {
				t.Fatal(err)
			}
			checkPartitions(t, sc, sink.rows)
			checkContainers(t, truth, sink.rows)
			checkFlags(t, truth, sink.findings)
			checkEnergy(t, sc, sink.rows)
		})
	}
}

type groupKey struct {
	start, end time.Time
	gpu        string
}

// checkPartitions: per (interval, GPU) both columns sum to the interval
// length, and each GPU is covered for the whole duration.
func checkPartitions(t *testing.T, sc *scenario.Scenario, rows []attribution.Row) {
	t.Helper()
	cover := checkIntervalPartitions(t, rows)
	for _, g := range sc.GPUs {
		if math.Abs(cover[g.UUID]-sc.Duration.Seconds()) > 1e-3 {
			t.Errorf("GPU %s covered %.3fs of %.3fs", g.UUID, cover[g.UUID], sc.Duration.Seconds())
		}
	}
}

// checkIntervalPartitions checks both partitions per (interval, GPU) and
// returns the seconds each GPU's rows cover.
func checkIntervalPartitions(t *testing.T, rows []attribution.Row) map[string]float64 {
	t.Helper()
	alloc := map[groupKey]float64{}
	used := map[groupKey]float64{}
	for _, r := range rows {
		k := groupKey{r.IntervalStart, r.IntervalEnd, r.GPUUUID}
		alloc[k] += r.AllocatedGPUSeconds
		used[k] += r.UsedGPUSeconds
		if r.AllocatedGPUSeconds < 0 || r.UsedGPUSeconds < 0 || r.EnergyJoules < 0 || r.MemoryMiBSeconds < 0 {
			t.Errorf("negative value in row %+v", r)
		}
	}
	cover := map[string]float64{}
	for k, a := range alloc {
		d := k.end.Sub(k.start).Seconds()
		cover[k.gpu] += d
		if math.Abs(a-d) > 1e-6*math.Max(d, 1) || math.Abs(used[k]-d) > 1e-6*math.Max(d, 1) {
			t.Errorf("partition broken for %s %s: allocated %.9f used %.9f of %.9f", k.gpu, k.start.Format(time.RFC3339), a, used[k], d)
		}
	}
	return cover
}

type agg struct {
	used, allocated float64
	modes, teams    map[string]bool
	methods         map[string]bool
}

func checkContainers(t *testing.T, truth *groundtruth.Truth, rows []attribution.Row) {
	t.Helper()
	got := map[string]*agg{}
	residual := map[string]map[attribution.Kind]float64{}
	for _, r := range rows {
		if r.Kind != attribution.KindContainer {
			if residual[r.GPUUUID] == nil {
				residual[r.GPUUUID] = map[attribution.Kind]float64{}
			}
			residual[r.GPUUUID][r.Kind] += r.AllocatedGPUSeconds + r.UsedGPUSeconds
			continue
		}
		key := r.Namespace + "/" + r.Pod + "/" + r.Container
		a := got[key]
		if a == nil {
			a = &agg{modes: map[string]bool{}, teams: map[string]bool{}, methods: map[string]bool{}}
			got[key] = a
		}
		a.used += r.UsedGPUSeconds
		a.allocated += r.AllocatedGPUSeconds
		a.modes[r.SharingMode] = true
		a.teams[r.Team] = true
		a.methods[r.Method] = true
	}
	for key, want := range truth.Containers {
		a := got[key]
		if a == nil {
			t.Errorf("%s: no ledger rows", key)
			continue
		}
		if want.Method != attribution.MethodEstimated {
			tol := 0.01
			if want.SharingMode == string(tenancy.MPS) {
				tol = 0.03
			}
			if err := math.Abs(a.used - want.Used); err > math.Max(tol*want.Used, 0.5) {
				t.Errorf("%s: used %.3f, truth %.3f", key, a.used, want.Used)
			}
		} else if !a.methods[attribution.MethodEstimated] {
			t.Errorf("%s: method %v, want estimated", key, a.methods)
		}
		if math.Abs(a.allocated-want.Allocated) > 1e-6*want.Allocated+1e-3+want.EdgeTol {
			t.Errorf("%s: allocated %.4f, truth %.4f (edge tolerance %.3f)", key, a.allocated, want.Allocated, want.EdgeTol)
		}
		if len(a.modes) != 1 || !a.modes[want.SharingMode] {
			t.Errorf("%s: sharing modes %v, want %s", key, a.modes, want.SharingMode)
		}
		if len(a.teams) != 1 || !a.teams[want.Team] {
			t.Errorf("%s: teams %v, want %s", key, a.teams, want.Team)
		}
	}
	for _, g := range truth.InstanceGroups {
		var u float64
		for _, m := range g.Members {
			if a := got[m]; a != nil {
				u += a.used
			}
		}
		if math.Abs(u-g.Used) > math.Max(0.01*g.Used, 0.5) {
			t.Errorf("instance group %v: used %.3f, truth %.3f", g.Members, u, g.Used)
		}
	}
	for uuid, g := range truth.GPUs {
		for kind, want := range map[attribution.Kind]*float64{attribution.KindUnallocated: g.Unallocated, attribution.KindUnattributed: g.Unattributed} {
			if want == nil {
				continue
			}
			if got := residual[uuid][kind]; math.Abs(got-*want) > math.Max(0.01**want, 0.5) {
				t.Errorf("GPU %s %s: %.3f, truth %.3f", uuid, kind, got, *want)
			}
		}
	}
}

func checkFlags(t *testing.T, truth *groundtruth.Truth, fs []attribution.Finding) {
	t.Helper()
	match := func(f attribution.Finding, want map[string]string) bool {
		fields := map[string]string{"kind": f.Kind, "node": f.Node, "gpu_uuid": f.GPUUUID, "namespace": f.Namespace, "pod": f.Pod, "container": f.Container,
			"start": f.Start.UTC().Format(time.RFC3339)}
		for k, v := range want {
			if fields[k] != v {
				return false
			}
		}
		return true
	}
	for _, want := range truth.ExpectFlags {
		found := false
		for _, f := range fs {
			found = found || match(f, want)
		}
		if !found {
			t.Errorf("missing finding %v", want)
		}
	}
	for _, want := range truth.ForbidFlags {
		for _, f := range fs {
			if match(f, want) {
				t.Errorf("unexpected finding %v: %+v", want, f)
			}
		}
	}
}

// loadTruthFlags reads expected and forbidden findings from the scenario's
// truth.json, where the contract authors put them.
func loadTruthFlags(t *testing.T, dir string) (expect, forbid []map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		return nil, nil
	}
	var tj struct {
		Expect []map[string]string `json:"expect_flags"`
		Forbid []map[string]string `json:"forbid_flags"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		t.Fatalf("%s/truth.json: %v", dir, err)
	}
	return tj.Expect, tj.Forbid
}

// checkEnergy: a GPU's rows carry exactly the energy of the simulator's
// power model, integrated here independently from the scenario's activity.
func checkEnergy(t *testing.T, sc *scenario.Scenario, rows []attribution.Row) {
	t.Helper()
	got := map[string]float64{}
	for _, r := range rows {
		got[r.GPUUUID] += r.EnergyJoules
	}
	for _, g := range sc.GPUs {
		want := expectedEnergy(sc, g)
		if math.Abs(got[g.UUID]-want) > 1e-3*want+1 {
			t.Errorf("GPU %s energy %.1f J, power model says %.1f J", g.UUID, got[g.UUID], want)
		}
	}
}

// expectedEnergy integrates P = idle + (max-idle) x busy over the scenario,
// busy = min(1, S) on a whole GPU and sum_i w(i) min(1, S_i) under MIG.
func expectedEnergy(sc *scenario.Scenario, g scenario.GPU) float64 {
	weight := map[string]float64{g.UUID: 1}
	for _, m := range g.MIGInstances {
		weight[m.UUID] = float64(m.Profile[0]-'0') / 7
	}
	type edge struct {
		at     time.Duration
		device string
		delta  float64
	}
	var edges []edge
	add := func(p scenario.Process) {
		if _, ok := weight[p.Device]; !ok {
			return
		}
		for _, s := range p.Busy {
			edges = append(edges, edge{s.From, p.Device, s.Fraction}, edge{s.To, p.Device, -s.Fraction})
		}
	}
	for _, pod := range sc.Pods {
		for _, cs := range [][]scenario.Container{pod.InitContainers, pod.Containers} {
			for _, c := range cs {
				for _, p := range c.Processes {
					add(p)
				}
			}
		}
	}
	for _, p := range sc.HostProcesses {
		add(p)
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].at < edges[j].at })
	sum := map[string]float64{}
	busy := func() float64 {
		var b float64
		for d, s := range sum {
			b += weight[d] * math.Min(1, math.Max(0, s))
		}
		return b
	}
	var energy float64
	last := time.Duration(0)
	for _, e := range edges {
		at := min(e.at, sc.Duration)
		energy += (g.IdleWatts + (g.MaxWatts-g.IdleWatts)*busy()) * (at - last).Seconds()
		last = at
		sum[e.device] += e.delta
	}
	energy += (g.IdleWatts + (g.MaxWatts-g.IdleWatts)*busy()) * (sc.Duration - last).Seconds()
	return energy
}
