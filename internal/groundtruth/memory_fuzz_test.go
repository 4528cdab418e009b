package groundtruth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// tinyMemoryScenario has memory over time: a process starting in an
// interval, a gap back to its baseline, a 0-MiB interval, and one ending
// inside an interval that reaches its end.
const tinyMemoryScenario = `apiVersion: gpuledger/v1
kind: Scenario
name: tiny-memory
start: 2026-11-01T00:00:00Z
duration: 10s
node: {name: n}
gpus:
- {index: 0, uuid: GPU-aaaaaaaa-0000-4000-8000-000000000000, model: H100-SXM5-80GB, mode: timeslicing}
pods:
- uid: 00000000-0000-4000-8000-000000000001
  namespace: ns
  name: p
  start: 1.5s
  containers:
  - name: c
    devices: [{resource: nvidia.com/gpu, ids: ["GPU-aaaaaaaa-0000-4000-8000-000000000000::0"]}]
    processes:
    - pid: 1
      device: GPU-aaaaaaaa-0000-4000-8000-000000000000
      memoryMiB: 1000
      memory: [{from: 1.5s, to: 3s, mib: 4000}, {from: 4s, to: 5s, mib: 0}, {from: 5s, to: 7.25s, mib: 9000}]
    - pid: 2
      device: GPU-aaaaaaaa-0000-4000-8000-000000000000
      memoryMiB: 500
      start: 2s
      end: 6s
      memory: [{from: 3s, to: 6s, mib: 700}]
`

// FuzzMemoryTruth checks the closed-form truth against a plain Riemann sum
// of Process.MemoryAt over each process's life (two independent readings
// of the same intervals): they may differ by at most the sum of the jumps
// times the step.
func FuzzMemoryTruth(f *testing.F) {
	f.Add([]byte(tinyMemoryScenario))
	f.Add([]byte(strings.Replace(tinyMemoryScenario, "{from: 1.5s, to: 3s, mib: 4000}, ", "", 1)))
	f.Add([]byte(strings.Replace(tinyMemoryScenario, "end: 6s", "end: 10s", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scenario.Parse(data, t.TempDir())
		if err != nil || sc.Duration > 60e9 || len(sc.Pods) > 10 {
			return
		}
		const step = 5 * time.Millisecond
		truth := Memory(sc)
		for pi := range sc.Pods {
			p := &sc.Pods[pi]
			for _, k := range podContainers(sc, p, pi) {
				key := p.Namespace + "/" + p.Name + "/" + k.c.Name
				var sum, jumps float64
				for _, proc := range k.c.Processes {
					start, end := max(proc.Start, k.win.start), min(proc.End, k.win.end, sc.Duration)
					prev := 0.0
					for at := start; at < end; at += step {
						v := float64(proc.MemoryAt(at))
						sum += v * min(step, end-at).Seconds()
						jumps += math.Abs(v - prev)
						prev = v
					}
					jumps += prev
				}
				got := truth[key]
				if got.MiBSeconds < 0 || got.Tol < 0 {
					t.Fatalf("%s: negative truth %+v", key, got)
				}
				if d := math.Abs(got.MiBSeconds - sum); d > jumps*step.Seconds()+1e-6*max(1, sum) {
					t.Fatalf("%s: truth %v, Riemann sum %v, off by %v (jumps %v)", key, got.MiBSeconds, sum, d, jumps)
				}
			}
		}
	})
}

func TestTinyMemorySeedByHand(t *testing.T) {
	sc, err := scenario.Parse([]byte(tinyMemoryScenario), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// pid 1 lives [1.5, 10]: 4000 x 1.5 + 1000 x 1 + 0 x 1 + 9000 x 2.25
	// + 1000 x 2.75 = 6000 + 1000 + 20250 + 2750 = 30000.
	// pid 2 lives [2, 6]: 500 x 1 + 700 x 3 = 2600.
	mt := Memory(sc)["ns/p/c"]
	if math.Abs(mt.MiBSeconds-32600) > 1e-6 {
		t.Errorf("memory %v MiB-s, want 32600", mt.MiBSeconds)
	}
	// Jumps of pid 1: 4000 up, 3000 down, 1000 down, 9000 up, 8000 down,
	// nothing at its end instant (it ends on its baseline), 1000 down:
	// 26000. pid 2: 500 up, 200 up, 700 -> 500 at its end instant (200),
	// 500 down: 1400. Tolerance (1 s poll): 27400 + 1e-6 x 32600.
	if want := 27400 + 1e-6*32600; math.Abs(mt.Tol-want) > 1e-6 {
		t.Errorf("tolerance %v, want %v", mt.Tol, want)
	}
}
