package sim

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// examplesDir holds the reference scenarios whose truth.json was computed
// outside this code base (testdata/examples/README.md).
const examplesDir = "../testdata/examples"

type truthFile struct {
	Containers map[string]struct {
		Used float64 `json:"used"`
	} `json:"containers"`
	GPUs map[string]struct {
		Unattributed float64 `json:"unattributed"`
	} `json:"gpus"`
}

// TestExamplesAgainstTruth replays each contract example through what the
// collector can observe and checks the busy GPU-seconds against the
// independently computed truth.json: per container from per-process samples
// on GPUs without MPS or MIG, and per node from device samples (MPS) and
// DCGM (MIG) elsewhere. Samples are whole percentages, so each may be off by
// half a percent of its period.
func TestExamplesAgainstTruth(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(examplesDir, "*", "scenario.yaml"))
	if len(dirs) == 0 {
		t.Fatalf("no examples under %s", examplesDir)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			sc, err := scenario.Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			var truth truthFile
			if err := json.Unmarshal(raw, &truth); err != nil {
				t.Fatalf("truth.json: %v", err)
			}
			checkExample(t, sc, truth)
		})
	}
}

func checkExample(t *testing.T, sc *scenario.Scenario, truth truthFile) {
	// PIDs are reused (churn), so a sample's owner is the pod process with
	// that PID alive during the sample's period.
	type life struct {
		start, end time.Duration
		key        string
	}
	owners := map[uint32][]life{}
	for _, p := range sc.Pods {
		for _, c := range p.Containers {
			for _, pr := range c.Processes {
				owners[pr.PID] = append(owners[pr.PID], life{pr.Start, pr.End, p.Namespace + "/" + p.Name + "/" + c.Name})
			}
		}
	}
	owner := func(pid uint32, stamp uint64) (string, bool) {
		end := time.UnixMicro(int64(stamp)).Sub(sc.Start)
		for _, l := range owners[pid] {
			if l.start < end && end-sc.DriverSamplePeriod <= l.end {
				return l.key, true
			}
		}
		return "", false
	}
	n := newNode(t, sc)
	ctx := context.Background()
	if err := n.DCGM().Watch(ctx, sc.PollInterval); err != nil {
		t.Fatal(err)
	}
	period := sc.DriverSamplePeriod.Seconds()
	perContainer := map[string]float64{}
	var nodeBusy float64
	lastProc, lastDev := make([]uint64, len(sc.GPUs)), make([]uint64, len(sc.GPUs))
	for at := sc.PollInterval; at <= sc.Duration; at += sc.PollInterval {
		if err := n.Advance(sc.Start.Add(at)); err != nil {
			t.Fatal(err)
		}
		vals, err := n.DCGM().Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range sc.GPUs {
			d := handle(t, n, i)
			switch g.Mode {
			case scenario.ModeMIG:
				for _, v := range vals {
					if v.Entity.GPUIndex == g.Index && v.Entity.GPUInstanceID >= 0 {
						w := instanceByGI(t, g, v.Entity.GPUInstanceID).Weight()
						nodeBusy += w * v.GrEngineActive * sc.PollInterval.Seconds()
					}
				}
			case scenario.ModeMPS:
				ts, v, ret := deviceSamples(t, d, lastDev[i])
				if ret == nvml.SUCCESS {
					lastDev[i] = ts[len(ts)-1]
					for _, pct := range v {
						nodeBusy += float64(pct) / 100 * period
					}
				}
			default:
				ps, ret := d.GetProcessUtilization(lastProc[i])
				if ret == nvml.SUCCESS {
					lastProc[i] = ps[len(ps)-1].TimeStamp
					for _, s := range ps {
						sec := float64(s.SmUtil) / 100 * period
						nodeBusy += sec
						if key, ok := owner(s.Pid, s.TimeStamp); ok {
							perContainer[key] += sec
						}
					}
				}
			}
		}
	}
	var want float64
	for key, c := range truth.Containers {
		want += c.Used
		if got, ok := perContainer[key]; ok && math.Abs(got-c.Used) > 0.005*sc.Duration.Seconds()+1e-6 {
			t.Errorf("%s: %.3f busy seconds from process samples, truth %.3f", key, got, c.Used)
		}
	}
	for _, g := range truth.GPUs {
		want += g.Unattributed
	}
	tol := 0.005*sc.Duration.Seconds()*float64(len(sc.GPUs)) + 1e-6
	if math.Abs(nodeBusy-want) > tol {
		t.Errorf("node busy %.3f s observed, truth %.3f s (tolerance %.3f)", nodeBusy, want, tol)
	}
	t.Logf("node busy %.3f s observed, truth %.3f s", nodeBusy, want)
}

// instanceByGI finds the MIG instance DCGM names by its GPU-instance ID.
func instanceByGI(t *testing.T, g scenario.GPU, gi int) scenario.MIGInstance {
	t.Helper()
	for _, m := range g.MIGInstances {
		if m.GI == gi {
			return m
		}
	}
	t.Fatalf("gpu %d has no MIG instance with gi %d", g.Index, gi)
	return scenario.MIGInstance{}
}
