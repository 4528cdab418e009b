package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examplesDir holds the reference scenarios that come with their own,
// independently computed truth (testdata/examples/README.md).
const examplesDir = "../../testdata/examples"

func loadExample(t *testing.T, name string) *Scenario {
	t.Helper()
	path := filepath.Join(examplesDir, name, "scenario.yaml")
	s, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return s
}

func TestExamplesLoad(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(examplesDir, "*", "scenario.yaml"))
	if len(paths) != 7 {
		t.Errorf("found %d examples, want 7", len(paths))
	}
	for _, p := range paths {
		if _, err := Load(p); err != nil {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
}

// The expected values below are read off the example files by hand (and
// segment counts with `wc -l` on the traces, minus the header).

func TestExampleChurn(t *testing.T) {
	s := loadExample(t, "churn-106")
	if s.Name != "churn-106" || s.Duration != 600*time.Second || s.DriverSamplePeriod != 200*time.Millisecond {
		t.Errorf("header = %s %v %v", s.Name, s.Duration, s.DriverSamplePeriod)
	}
	jobA := s.Pods[0]
	if jobA.Name != "job-a" || jobA.Start != 46*time.Second || jobA.End != 228200*time.Millisecond {
		t.Errorf("job-a = %s [%v,%v], want job-a [46s,3m48.2s]", jobA.Name, jobA.Start, jobA.End)
	}
	p := jobA.Containers[0].Processes[0]
	if p.PID != 20001 || p.Start != 46500*time.Millisecond || p.End != 227700*time.Millisecond || p.MemoryMiB != 2048 {
		t.Errorf("job-a process = pid %d [%v,%v] %d MiB", p.PID, p.Start, p.End, p.MemoryMiB)
	}
	want := Segment{47 * time.Second, 227200 * time.Millisecond, 0.2}
	if len(p.Busy) != 1 || p.Busy[0] != want {
		t.Errorf("job-a busy = %v, want [%v]", p.Busy, want)
	}
	// job-c gives no start: the pod starts at 0 and ends at 600s.
	if c := s.Pods[2]; c.Start != 0 || c.End != 600*time.Second {
		t.Errorf("job-c = [%v,%v], want [0,10m]", c.Start, c.End)
	}
	// PID 20001 comes back in job-b after job-a's process exits.
	if b := s.Pods[1].Containers[0].Processes[0]; b.PID != 20001 || b.Start != 234*time.Second {
		t.Errorf("job-b process = pid %d start %v", b.PID, b.Start)
	}
	if h := s.HostProcesses[0]; h.PID != 500 || h.Start != 0 || h.End != 600*time.Second || len(h.Busy) != 1 || h.Busy[0].Fraction != 0.05 {
		t.Errorf("host process = %+v", h)
	}
	// hex(sha256("85bf2c4f-5284-51a8-8687-4a6fc4652be9/worker")), from Python's hashlib.
	if id := jobA.Containers[0].ID; id != "615d7132b74a24b4c8c1948eff2e0ead265992cbcc342699f9beecf615867e97" {
		t.Errorf("job-a worker ID = %s", id)
	}
	if got := s.Node.Labels["nvidia.com/gpu.replicas"]; got != "4" {
		t.Errorf("replicas label = %q, want 4", got)
	}
	if d := jobA.Containers[0].Devices[0]; d.Resource != "nvidia.com/gpu.shared" || len(d.IDs) != 1 || d.IDs[0] != "GPU-26ca1da6-4802-59ea-b5a5-2ba03979cd71::0" {
		t.Errorf("job-a devices = %+v", d)
	}
}

func TestExampleHAMi(t *testing.T) {
	s := loadExample(t, "hami-105")
	if g := s.GPUs[0]; g.Mode != ModeHAMi || g.Model != "H100-SXM5-80GB" {
		t.Errorf("gpu = %s %s", g.Mode, g.Model)
	}
	ann := s.Pods[0].Annotations["hami.io/vgpu-devices-allocated"]
	if ann != "GPU-37029659-81be-54f8-9beb-f69354f2fd7b,NVIDIA,20000,25:;" {
		t.Errorf("vllm-0 annotation = %q", ann)
	}
	if got := s.Pods[0].Containers[0].Devices[0].IDs[0]; got != "GPU-37029659-81be-54f8-9beb-f69354f2fd7b-0" {
		t.Errorf("vllm-0 device ID = %q", got)
	}
	if n := len(s.Pods[0].Containers[0].Processes[0].Busy); n != 15 {
		t.Errorf("vllm-0 segments = %d, want 15", n)
	}
}

func TestExampleMIGMix(t *testing.T) {
	s := loadExample(t, "migmix-107")
	g := s.GPUs[0]
	want := []MIGInstance{
		{"MIG-4ed253d4-dd4e-584a-9e29-010e012e9496", "3g.40gb", 0},
		{"MIG-0af17cfa-57dd-5884-b3af-6e540a7978cf", "2g.20gb", 1},
		{"MIG-72cddd4c-4ded-56bf-9499-15dcfbb74424", "1g.10gb", 2},
	}
	if g.Mode != ModeMIG || len(g.MIGInstances) != len(want) {
		t.Fatalf("gpu = %s with %d instances", g.Mode, len(g.MIGInstances))
	}
	for i, w := range want {
		if g.MIGInstances[i] != w {
			t.Errorf("instance %d = %+v, want %+v", i, g.MIGInstances[i], w)
		}
	}
	gpu, inst, ok := s.Device("MIG-0af17cfa-57dd-5884-b3af-6e540a7978cf")
	if !ok || gpu.Index != 0 || inst.Profile != "2g.20gb" || inst.Weight() != 2.0/7 {
		t.Errorf("Device(2g instance) = %v %v %v", gpu, inst, ok)
	}
	// The same PID runs on two instances at once (see checkPIDs).
	if a, b := s.Pods[1].Containers[0].Processes[0], s.Pods[3].Containers[0].Processes[0]; a.PID != 70002 || b.PID != 70002 {
		t.Errorf("pids = %d, %d, want 70002 twice", a.PID, b.PID)
	}
	if n := len(s.Pods[0].Containers[0].Processes[0].Busy); n != 20 {
		t.Errorf("big-0 segments = %d, want 20", n)
	}
}

func TestExampleIdle(t *testing.T) {
	s := loadExample(t, "idle-104")
	nb := s.Pods[1]
	if nb.Name != "nb-idle" || len(nb.Containers[0].Processes[0].Busy) != 0 {
		t.Errorf("nb-idle busy = %v, want none (header-only trace)", nb.Containers[0].Processes[0].Busy)
	}
	batch := s.Pods[3].Containers[0].Processes[0]
	if len(batch.Busy) != 1 || batch.Busy[0] != (Segment{0, 600 * time.Second, 0.3}) {
		t.Errorf("batch busy = %v", batch.Busy)
	}
	if ns, ok := s.Namespace("ml"); !ok || ns.Labels["team"] != "platform-ml" {
		t.Errorf("namespace ml = %+v %v", ns, ok)
	}
	if s.Detection.IdleWindow != 10*time.Minute || s.GPUs[4].Mode != ModeExclusive || s.GPUs[4].Model != "A100-SXM4-40GB" {
		t.Errorf("idle window %v, gpu 4 %s %s", s.Detection.IdleWindow, s.GPUs[4].Mode, s.GPUs[4].Model)
	}
}

func TestExampleLargeTraces(t *testing.T) {
	cases := []struct {
		name     string
		mode     string
		segments int // of pods[0]'s process
	}{
		{"timeslicing-seven-101", ModeTimeslicing, 1248},
		{"mig-seven-102", ModeMIG, 299},
		{"mps-hostile-103", ModeMPS, 1789},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := loadExample(t, tc.name)
			if s.GPUs[0].Mode != tc.mode || s.GPUs[0].MPSProcessView != MPSViewClients {
				t.Errorf("gpu = %s %s", s.GPUs[0].Mode, s.GPUs[0].MPSProcessView)
			}
			busy := s.Pods[0].Containers[0].Processes[0].Busy
			if len(busy) != tc.segments {
				t.Errorf("segments = %d, want %d", len(busy), tc.segments)
			}
			checkInvariants(t, s)
		})
	}
}

// TestExampleMPSUnderTimeslicingPhysics replays mps-hostile-103, whose
// clients together ask for more than the GPU, as if it were time-sliced:
// that must be rejected, at the first instant a simple reference finds.
func TestExampleMPSUnderTimeslicingPhysics(t *testing.T) {
	dir := filepath.Join(examplesDir, "mps-hostile-103")
	data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mps, err := Parse(data, dir)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	at, sum, ok := referenceOverload(mps.Pods, mps.GPUs[0].UUID)
	if !ok {
		t.Fatal("the reference finds no instant above 1; the example changed?")
	}
	_, err = Parse([]byte(strings.Replace(string(data), "mode: mps", "mode: timeslicing", 1)), dir)
	wantErr(t, err, "gpus[0]", mps.GPUs[0].UUID, "at "+at.String()+" ")
	t.Logf("first overload at %v, sum %.4f: %v", at, sum, err)
}
