package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseBaseAppliesDefaults(t *testing.T) {
	s, err := Parse([]byte(baseYAML), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wantStart := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if !s.Start.Equal(wantStart) || !s.End().Equal(wantStart.Add(10*time.Minute)) {
		t.Errorf("Start, End = %v, %v; want %v, %v", s.Start, s.End(), wantStart, wantStart.Add(10*time.Minute))
	}
	if s.DriverSamplePeriod != 166*time.Millisecond {
		t.Errorf("DriverSamplePeriod = %v, want 166ms", s.DriverSamplePeriod)
	}
	if got := s.GPUs[0].MPSProcessView; got != "clients" {
		t.Errorf("MPSProcessView default = %q, want clients", got)
	}
	if g := s.GPUs[1]; g.IdleWatts != 60 || g.MaxWatts != 400 {
		t.Errorf("power defaults = %v/%v, want 60/400", g.IdleWatts, g.MaxWatts)
	}
	if s.Namespaces[1].Labels != nil && len(s.Namespaces[1].Labels) != 0 {
		t.Errorf("team-c labels = %v, want none", s.Namespaces[1].Labels)
	}

	// Pod 1 lives [30s,5m]; its first process starts at 40s explicitly and
	// ends with the pod; the sidecar process takes both ends from the pod.
	p1 := s.Pods[1]
	if got := p1.Containers[0].Processes[0]; got.Start != 40*time.Second || got.End != 5*time.Minute {
		t.Errorf("process 10002 lifetime = [%v,%v], want [40s,5m]", got.Start, got.End)
	}
	if got := p1.Containers[1].Processes[0]; got.Start != 30*time.Second || got.End != 5*time.Minute {
		t.Errorf("process 10003 lifetime = [%v,%v], want [30s,5m]", got.Start, got.End)
	}
	// Host processes default to the whole scenario; a 0 fraction is dropped.
	if h := s.HostProcesses[0]; h.Start != 0 || h.End != 10*time.Minute || len(h.Busy) != 0 {
		t.Errorf("host process = [%v,%v] busy %v, want [0,10m] and no segments", h.Start, h.End, h.Busy)
	}
	// hex(sha256("0b5c6d2e-0000-4000-8000-000000000001/server")), from Python's hashlib.
	if got, want := s.Pods[0].Containers[0].ID, "935b3562f6f61f4178d3582841c22fd2705a303cb15dcd1752d7f7b2e1fd2872"; got != want {
		t.Errorf("derived container ID = %s, want %s", got, want)
	}
	wantBusy := []Segment{{0, 2 * time.Minute, 0.6}, {2 * time.Minute, 4 * time.Minute, 0.2}}
	if got := s.Pods[0].Containers[0].Processes[0].Busy; !reflect.DeepEqual(got, wantBusy) {
		t.Errorf("busy = %v, want %v", got, wantBusy)
	}
	if got := s.Pods[0].Containers[0].Processes[0].Comm; got != "" {
		t.Errorf("Comm = %q, want empty (the simulator picks)", got)
	}
}

func TestParseSortsSegments(t *testing.T) {
	y := edit(t,
		"- {from: 0s, to: 2m, fraction: 0.6}\n              - {from: 2m, to: 4m, fraction: 0.2}",
		"- {from: 3m, to: 4m, fraction: 0.2}\n              - {from: 0s, to: 1m, fraction: 0}\n              - {from: 1m, to: 2m, fraction: 0.5}")
	s, err := Parse([]byte(y), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Segment{{time.Minute, 2 * time.Minute, 0.5}, {3 * time.Minute, 4 * time.Minute, 0.2}}
	if got := s.Pods[0].Containers[0].Processes[0].Busy; !reflect.DeepEqual(got, want) {
		t.Errorf("busy = %v, want %v", got, want)
	}
}

func TestParseAcceptsMPSOversubscription(t *testing.T) {
	// Under MPS the fractions may add up past 1: 0.6 + 0.4 + 0.5 at 1m.
	y := edit(t, "mode: timeslicing", "mode: mps", "fraction: 0}]", "fraction: 0.5}]")
	if _, err := Parse([]byte(y), ""); err != nil {
		t.Fatalf("Parse: %v", err)
	}
}

func TestParsePIDReuse(t *testing.T) {
	// Process 10001 on GPU 0 ends at 20s; the PID then comes back in pod 1.
	base := []string{"memoryMiB: 2048\n", "memoryMiB: 2048\n            end: 20s\n",
		"{from: 0s, to: 2m, fraction: 0.6}\n              - {from: 2m, to: 4m, fraction: 0.2}", "{from: 0s, to: 10s, fraction: 0.6}",
		"pid: 10002", "pid: 10001"}
	if _, err := Parse([]byte(edit(t, base...)), ""); err != nil {
		t.Errorf("PID reused after its owner exited: %v", err)
	}
	// Lifetimes are closed: reappearing at the very instant the first owner
	// ends is two processes at once.
	touching := append(base, "start: 40s", "start: 20s", "start: 30s\n    end: 5m", "start: 20s\n    end: 5m")
	_, err := Parse([]byte(edit(t, touching...)), "")
	wantErr(t, err, "pods[1].containers[0].processes[0].pid", "10001", "pods[0].containers[0].processes[0]")
}

func TestLoadReadsTraceRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	trace := "from,to,fraction\n90,120,0.25\n60.5,61,1\n100.000000,100.000000,0\n"
	y := edit(t, "busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: traces/t.csv")
	// The zero-length zero-fraction row overlaps nothing but has from == to: rejected.
	writeFile(t, filepath.Join(dir, "traces", "t.csv"), trace)
	writeFile(t, filepath.Join(dir, "s.yaml"), y)
	_, err := Load(filepath.Join(dir, "s.yaml"))
	wantErr(t, err, "pods[1].containers[1].processes[0].busyTrace(traces/t.csv line 4).from", "1m40s is not before to 1m40s")

	writeFile(t, filepath.Join(dir, "traces", "t.csv"), "from,to,fraction\n90,120,0.25\n60.5,61,1\n")
	s, err := Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []Segment{{60500 * time.Millisecond, 61 * time.Second, 1}, {90 * time.Second, 120 * time.Second, 0.25}}
	if got := s.Pods[1].Containers[1].Processes[0].Busy; !reflect.DeepEqual(got, want) {
		t.Errorf("busy = %v, want %v", got, want)
	}
	if s.Dir != dir {
		t.Errorf("Dir = %q, want %q", s.Dir, dir)
	}
}

func TestTraceErrors(t *testing.T) {
	cases := []struct {
		name, trace string
		want        []string
	}{
		{"header", "start,end,frac\n1,2,0.5\n", []string{"busyTrace", `"traces/t.csv"`, `header is "start,end,frac"`}},
		{"empty", "", []string{"busyTrace", "empty file"}},
		{"not a number", "from,to,fraction\n1,2,lots\n", []string{"busyTrace", "line 2", `fraction "lots" is not a number`}},
		{"fields", "from,to,fraction\n1,2\n", []string{"busyTrace", "line 2"}},
		{"fraction", "from,to,fraction\n40,50,0.5\n50,60,1.3\n", []string{"busyTrace(traces/t.csv line 3).fraction", "1.3 is outside [0,1]"}},
		{"negative", "from,to,fraction\n-1,50,0.5\n", []string{"busyTrace(traces/t.csv line 2).from", "-1 is negative"}},
		{"overlap", "from,to,fraction\n40,50,0.5\n45,60,0.5\n", []string{"busyTrace(traces/t.csv line 3)", "overlaps", "line 2"}},
		{"lifetime", "from,to,fraction\n10,50,0.5\n", []string{"busyTrace(traces/t.csv line 2)", "[10s,50s) lies outside the process lifetime [30s,5m0s]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "traces", "t.csv"), tc.trace)
			y := edit(t, "busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: traces/t.csv")
			_, err := Parse([]byte(y), dir)
			wantErr(t, err, append([]string{"pods[1].containers[1].processes[0]"}, tc.want...)...)
		})
	}
}

func TestTraceMustBeRegularFile(t *testing.T) {
	y := edit(t, "busy: [{from: 30s, to: 5m, fraction: 1}]", "busyTrace: /dev/zero")
	_, err := Parse([]byte(y), "")
	wantErr(t, err, "pods[1].containers[1].processes[0].busyTrace", "/dev/zero", "not a regular file")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err is non-nil and its message holds every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}
