package procfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

func writeProc(t *testing.T, root string, pid, cgroup, comm string) {
	t.Helper()
	dir := filepath.Join(root, pid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
	if comm != "" {
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolver(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, "10001",
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+uidSlice+".slice/cri-containerd-"+ctrA+".scope\n",
		"python3\n")
	writeProc(t, root, "4000000", "0::/system.slice/nvidia-mps.service\n", "nvidia-cuda-mps-server\n")
	writeProc(t, root, "77", "0::/kubepods.slice/kubepods-podbad.slice\n", "x\n")
	writeProc(t, root, "78", "0::/\n", "") // exited between the two reads

	r := NewResolver(root)
	tests := []struct {
		pid  uint32
		want attribution.Owner
	}{
		{10001, attribution.Owner{Resolved: true, PodUID: uid, ContainerID: ctrA, Comm: "python3"}},
		{4000000, attribution.Owner{Resolved: true, Comm: "nvidia-cuda-mps-server"}},
	}
	for _, tt := range tests {
		got, err := r.Resolve(tt.pid)
		if err != nil {
			t.Fatalf("Resolve(%d): %v", tt.pid, err)
		}
		if got != tt.want {
			t.Errorf("Resolve(%d) = %+v, want %+v", tt.pid, got, tt.want)
		}
	}
	if !tests[1].want.IsHost() {
		t.Error("the MPS daemon should be a host process")
	}

	if _, err := r.Resolve(424242); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Resolve(missing pid) error = %v, want fs.ErrNotExist", err)
	}
	if _, err := r.Resolve(78); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Resolve(pid without comm) error = %v, want fs.ErrNotExist", err)
	}
	if o, err := r.Resolve(77); err == nil {
		t.Errorf("Resolve(malformed cgroup) = %+v, want an error", o)
	}
}

func TestNewResolverDefaultRoot(t *testing.T) {
	if got := NewResolver("").root; got != DefaultRoot {
		t.Errorf("root = %q, want %q", got, DefaultRoot)
	}
}

// The real /proc of the test process must parse, whatever cgroup setup the
// machine running the tests has.
func TestResolverOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/cgroup"); err != nil {
		t.Skip("no /proc here")
	}
	got, err := NewResolver("/proc").Resolve(uint32(os.Getpid()))
	if err != nil {
		t.Fatalf("Resolve(own pid): %v", err)
	}
	// comm is the executable name cut to 15 bytes.
	want := filepath.Base(os.Args[0])
	if len(want) > 15 {
		want = want[:15]
	}
	if !got.Resolved || got.Comm != want {
		t.Errorf("Resolve(own pid) = %+v, want Resolved and Comm %q", got, want)
	}
}

// A junk line beside a good one still resolves the owner and is counted, so
// the collector can report it; a file of nothing but junk fails and counts.
func TestResolverCountsMalformedLines(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, "500", "junk\n0::/kubepods/besteffort/pod"+uid+"/"+ctrA+"\r\n", "python3\n")
	writeProc(t, root, "501", "x\ny\n", "sh\n")
	r := NewResolver(root)
	if n, _ := r.MalformedCgroupLines(); n != 0 {
		t.Fatalf("a new resolver counts %d malformed lines", n)
	}
	got, err := r.Resolve(500)
	if want := (attribution.Owner{Resolved: true, PodUID: uid, ContainerID: ctrA, Comm: "python3"}); err != nil || got != want {
		t.Fatalf("Resolve(500) = %+v, %v; want %+v", got, err, want)
	}
	n, example := r.MalformedCgroupLines()
	if n != 1 || !strings.Contains(example, "pid 500") || !strings.Contains(example, "junk") {
		t.Errorf("MalformedCgroupLines = %d, %q; want 1 naming pid 500 and the line", n, example)
	}
	if _, err := r.Resolve(501); err == nil {
		t.Error("Resolve of a file of junk succeeded")
	}
	if n, _ := r.MalformedCgroupLines(); n != 3 {
		t.Errorf("MalformedCgroupLines = %d after two more junk lines, want 3", n)
	}
}
