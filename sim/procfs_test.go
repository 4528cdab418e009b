package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func readProc(t *testing.T, n *Node, pid, file string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.ProcRoot(), pid, file))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatalf("read %s/%s: %v", pid, file, err)
	}
	return string(b), true
}

func TestProcfs(t *testing.T) {
	sc := baseScenario(scenario.ModeTimeslicing, 20*time.Second)
	sc.GPUs = append(sc.GPUs, scenario.GPU{Index: 1, UUID: gpu1, Model: "H200-141GB", Mode: scenario.ModeMPS, MPSProcessView: "server", IdleWatts: 70, MaxWatts: 700})
	// PID 100 is reused: pod a's process ends at 5s, pod b's starts at 5s.
	addPod(sc, "0b5c6d2e-0000-4000-8000-00000000000a", "a", 0, 5*time.Second, proc1(100, gpu0, 1))
	addPod(sc, "0b5c6d2e-0000-4000-8000-00000000000b", "b", 5*time.Second, 20*time.Second, proc1(100, gpu0, 1))
	// PID 300 lives only between two polls.
	short := proc1(300, gpu0, 1)
	short.Start, short.End, short.Comm = 3*time.Second, 4*time.Second, "trainer"
	addPod(sc, "0b5c6d2e-0000-4000-8000-00000000000c", "c", 0, 20*time.Second, short)
	sc.HostProcesses = []scenario.Process{{PID: 500, Device: gpu0, MemoryMiB: 10, End: 12 * time.Second}}
	n := newNode(t, sc)

	cgA := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b5c6d2e_0000_4000_8000_00000000000a.slice/cri-containerd-" + hexID("a") + ".scope\n"
	cgB := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b5c6d2e_0000_4000_8000_00000000000b.slice/cri-containerd-" + hexID("b") + ".scope\n"
	expect := func(pid, cgroup, comm string) {
		t.Helper()
		gotCg, ok := readProc(t, n, pid, "cgroup")
		gotComm, _ := readProc(t, n, pid, "comm")
		switch {
		case cgroup == "" && ok:
			t.Errorf("pid %s present (cgroup %q), want absent", pid, gotCg)
		case cgroup != "" && (gotCg != cgroup || gotComm != comm):
			t.Errorf("pid %s: cgroup %q comm %q, want %q %q", pid, gotCg, gotComm, cgroup, comm)
		}
	}
	expect("100", cgA, "python3\n")
	expect("500", "0::/system.slice/gpu-host-500.service\n", "gpu-host\n")
	expect("4000001", "0::/system.slice/nvidia-mps.service\n", "nvidia-cuda-mps-server\n")
	expect("300", "", "")

	advance(t, n, 2*time.Second)
	expect("100", cgA, "python3\n")
	advance(t, n, 5*time.Second) // a's process still alive at its end, b's starts: b owns PID 100
	expect("100", cgB, "python3\n")
	advance(t, n, 6*time.Second) // a's end must not remove b's entry
	expect("100", cgB, "python3\n")
	expect("300", "", "") // started and ended between polls

	advance(t, n, 12*time.Second)
	expect("500", "0::/system.slice/gpu-host-500.service\n", "gpu-host\n")
	advance(t, n, 12001*ms)
	expect("500", "", "")
	expect("100", cgB, "python3\n")
	advance(t, n, 20*time.Second)
	expect("100", cgB, "python3\n")
	expect("4000001", "0::/system.slice/nvidia-mps.service\n", "nvidia-cuda-mps-server\n")
	advance(t, n, 21*time.Second)
	expect("100", "", "")
	expect("4000001", "", "")
	entries, err := os.ReadDir(n.ProcRoot())
	if err != nil || len(entries) != 0 {
		t.Errorf("procfs after the end: %v %v, want empty", entries, err)
	}
}

func TestProcfsShortProcessSeenWhenPolled(t *testing.T) {
	sc := baseScenario(scenario.ModeExclusive, 10*time.Second)
	p := proc1(300, gpu0, 1)
	p.Start, p.End, p.Comm = 3*time.Second, 4*time.Second, "trainer"
	addPod(sc, "uid-c", "c", 0, 10*time.Second, p)
	n := newNode(t, sc)
	advance(t, n, 3*time.Second)
	if c, ok := readProc(t, n, "300", "comm"); !ok || c != "trainer\n" {
		t.Errorf("comm %q %v, want trainer", c, ok)
	}
	procs, _ := handle(t, n, 0).GetComputeRunningProcesses()
	if len(procs) != 1 || procs[0].Pid != 300 {
		t.Errorf("running %+v, want pid 300", procs)
	}
	advance(t, n, 4*time.Second)
	if _, ok := readProc(t, n, "300", "comm"); !ok {
		t.Error("pid 300 gone at its end, want present (inclusive)")
	}
	advance(t, n, 4001*ms)
	if _, ok := readProc(t, n, "300", "comm"); ok {
		t.Error("pid 300 present after its end")
	}
	if procs, _ := handle(t, n, 0).GetComputeRunningProcesses(); len(procs) != 0 {
		t.Errorf("running %+v after the end, want none", procs)
	}
}
