package scenario

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// withMemory gives pid 10001 (pods[0], 2048 MiB, alive [0,10m]) memory
// intervals.
func withMemory(t *testing.T, memory string, more ...string) string {
	t.Helper()
	return edit(t, append([]string{"            memoryMiB: 2048\n", "            memoryMiB: 2048\n            memory: " + memory + "\n"}, more...)...)
}

// TestMemoryRejects breaks one memory rule per case: the error names the
// field path and the value.
func TestMemoryRejects(t *testing.T) {
	const (
		p0   = "pods[0].containers[0].processes[0]"
		p1   = "pods[1].containers[0].processes[0]"
		mig2 = "MIG-1c2d0000-0000-4000-8000-000000000002"
	)
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"mib negative", withMemory(t, "[{from: 0s, to: 1m, mib: -1}]"), []string{p0 + ".memory[0].mib", "-1 is outside [0,"}},
		{"mib fractional", withMemory(t, "[{from: 0s, to: 1m, mib: 1.5}]"), []string{p0 + ".memory[0].mib", `"1.5" is not an integer`}},
		{"mib missing", withMemory(t, "[{from: 0s, to: 1m}]"), []string{p0 + ".memory[0].mib", "is required"}},
		{"from missing", withMemory(t, "[{to: 1m, mib: 5}]"), []string{p0 + ".memory[0].from", "is required"}},
		{"to garbage", withMemory(t, "[{from: 0s, to: later, mib: 5}]"), []string{p0 + ".memory[0].to", `"later"`}},
		{"empty interval", withMemory(t, "[{from: 2m, to: 1m, mib: 5}]"), []string{p0 + ".memory[0].from", "2m0s is not before to 1m0s"}},
		{"overlap", withMemory(t, "[{from: 0s, to: 2m, mib: 5}, {from: 1m, to: 3m, mib: 6}]"),
			[]string{p0 + ".memory[1]", "[1m0s,3m0s) overlaps " + p0 + ".memory[0] [0s,2m0s)"}},
		{"outside lifetime", withMemory(t, "[{from: 9m, to: 11m, mib: 5}]"),
			[]string{p0 + ".memory[0]", "[9m0s,11m0s) lies outside the process lifetime [0s,10m0s]"}},
		{"unknown key", withMemory(t, "[{from: 0s, to: 1m, MiB: 5}]"), []string{p0 + ".memory[0].MiB", `unknown field "MiB"`}},
		{"memory and memoryTrace", withMemory(t, "[{from: 0s, to: 1m, mib: 5}]\n            memoryTrace: traces/m.csv"),
			[]string{p0 + ".memoryTrace", `"traces/m.csv" given together with memory`}},
		{"memoryTrace missing", edit(t, "            memoryMiB: 2048\n", "            memoryMiB: 2048\n            memoryTrace: traces/none.csv\n"),
			[]string{p0 + ".memoryTrace", `"traces/none.csv"`, "no such file"}},
		// 80700 MiB (in place of the 2048 baseline) on an 81920 MiB A100
		// beside pid 10002's 1024 and the host's 300: 82024.
		{"device full", withMemory(t, "[{from: 1m, to: 2m, mib: 80700}]"),
			[]string{"gpus[0]", "framebuffer on GPU-6f1f0f5e-0000-4000-8000-000000000000 sums to 82024 MiB at 1m0s",
				p0 + " pid 10001: 80700 MiB", p1 + " pid 10002: 1024 MiB", "hostProcesses[0] pid 500: 300 MiB", "above the device's 81920 MiB"}},
		// 1g.10gb on an A100-80GB is 10240 MiB.
		{"mig instance full", edit(t, "    busy: [{from: 0s, to: 10m, fraction: 0}]\n",
			"    busy: [{from: 0s, to: 10m, fraction: 0}]\n  - pid: 501\n    device: "+mig2+"\n    memory: [{from: 0s, to: 10m, mib: 10241}]\n"),
			[]string{"gpus[1].migInstances[1]", "sums to 10241 MiB at 0s", "above the device's 10240 MiB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), t.TempDir())
			wantErr(t, err, tc.want...)
		})
	}
}

// TestMemoryFitsAtTheLimit: exactly the device's memory is allowed, and a
// process that gives memory back makes room for another at that instant.
func TestMemoryFitsAtTheLimit(t *testing.T) {
	// 81920 - 1024 (pid 10002 from 40s) - 300 (host) = 80596.
	y := withMemory(t, "[{from: 1m, to: 2m, mib: 80596}]")
	if _, err := Parse([]byte(y), t.TempDir()); err != nil {
		t.Fatalf("a full device is allowed: %v", err)
	}
	// Before pid 10002 starts there is 1024 MiB more room.
	y = withMemory(t, "[{from: 0s, to: 40s, mib: 81620}, {from: 40s, to: 2m, mib: 80596}]")
	if _, err := Parse([]byte(y), t.TempDir()); err != nil {
		t.Fatalf("memory given back as a neighbour starts: %v", err)
	}
}

func TestMemoryAt(t *testing.T) {
	y := withMemory(t, "[{from: 3m, to: 4m, mib: 0}, {from: 1m, to: 2m, mib: 4096}, {from: 2m, to: 3m, mib: 8192}]")
	s, err := Parse([]byte(y), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &s.Pods[0].Containers[0].Processes[0]
	// Written by hand from the YAML above: 2048 outside the intervals,
	// intervals half-open, sorted on load, 0 overriding the baseline.
	for _, c := range []struct {
		at   time.Duration
		want uint64
	}{
		{0, 2048}, {time.Minute - 1, 2048}, {time.Minute, 4096}, {2*time.Minute - 1, 4096},
		{2 * time.Minute, 8192}, {3 * time.Minute, 0}, {4*time.Minute - 1, 0}, {4 * time.Minute, 2048}, {10 * time.Minute, 2048},
	} {
		if got := p.MemoryAt(c.at); got != c.want {
			t.Errorf("MemoryAt(%v) = %d, want %d", c.at, got, c.want)
		}
	}
	if p.Memory[0].From != time.Minute {
		t.Errorf("intervals not sorted: %+v", p.Memory)
	}
}

func TestMemoryTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "traces", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string {
		return edit(t, "            memoryMiB: 2048\n", "            memoryMiB: 2048\n            memoryTrace: traces/"+name+"\n")
	}
	write("ok.csv", "from,to,mib\n0,60,1000\n60,120.5,3000\n")
	s, err := Parse([]byte(at("ok.csv")), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []MemorySegment{{0, time.Minute, 1000}, {time.Minute, 120500 * time.Millisecond, 3000}}
	got := s.Pods[0].Containers[0].Processes[0].Memory
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("trace = %+v, want %+v", got, want)
	}
	const p0 = "pods[0].containers[0].processes[0].memoryTrace"
	for _, c := range []struct{ name, text, want string }{
		{"header.csv", "from,to,fraction\n0,60,1\n", `header is "from,to,fraction", want "from,to,mib"`},
		{"frac.csv", "from,to,mib\n0,60,1.5\n", p0 + "(traces/frac.csv line 2).mib: 1.5 is not a whole number"},
		{"neg.csv", "from,to,mib\n0,60,-3\n", p0 + "(traces/neg.csv line 2).mib: -3 is not a whole number"},
		{"text.csv", "from,to,mib\n0,60,lots\n", `mib "lots" is not a number`},
		{"overlap.csv", "from,to,mib\n0,60,1\n30,90,2\n", p0 + "(traces/overlap.csv line 3)"},
		{"empty.csv", "", "empty file"},
	} {
		write(c.name, c.text)
		_, err := Parse([]byte(at(c.name)), dir)
		wantErr(t, err, c.want)
	}
}

// A scenario that gives each process one memoryMiB is checked for activity
// physics only (the scenario format's rule), never for memory: it runs even
// where the sum exceeds the device. 10241 MiB on a 10240 MiB 1g.10gb
// instance, as in TestMemoryRejects but without memory over time.
func TestConstantMemoryIsNotCapacityChecked(t *testing.T) {
	yaml := edit(t, "    busy: [{from: 0s, to: 10m, fraction: 0}]\n",
		"    busy: [{from: 0s, to: 10m, fraction: 0}]\n  - pid: 501\n    device: MIG-1c2d0000-0000-4000-8000-000000000002\n    memoryMiB: 10241\n")
	if _, err := Parse([]byte(yaml), t.TempDir()); err != nil {
		t.Fatalf("Parse: %v", err)
	}
}
