package nvmlsource

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestMinorNumbers: GKE's device plugin names GPUs nvidia<minor>, and the
// minor need not equal the NVML index (here GPU 0 is /dev/nvidia3). A GPU
// that cannot say its minor is still read, without HasMinor, said once,
// and does not make every cycle enumerate the GPUs again.
func TestMinorNumbers(t *testing.T) {
	withMinor := plainGPU("GPU-a")
	withMinor.minor = 3
	unsupported := plainGPU("GPU-b")
	unsupported.minorRet = nvml.ERROR_NOT_SUPPORTED
	failing := migGPU()
	failing.minor, failing.minorRet = 7, nvml.ERROR_UNKNOWN
	zero := plainGPU("GPU-z") // minor 0 is a minor like any other

	var logs bytes.Buffer
	s := New(newLib(withMinor, unsupported, failing, zero), slog.New(slog.NewTextHandler(&logs, nil)))
	if err := s.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	for cycle := range 3 {
		r := read(t, s, time.Duration(cycle)*time.Second)
		if len(r.Errors) != 0 {
			t.Fatalf("cycle %d: errors %v; a missing minor is no read error", cycle, r.Errors)
		}
		type minor struct {
			n  int
			ok bool
		}
		want := []minor{{3, true}, {0, false}, {0, false}, {0, true}}
		for i, g := range r.GPUs {
			if got := (minor{g.Minor, g.HasMinor}); got != want[i] {
				t.Errorf("cycle %d: GPU %d (%s) minor = %+v, want %+v", cycle, i, g.UUID, got, want[i])
			}
		}
		if g := r.GPUs[2]; len(g.MIG) != 3 || g.MIG[1].GPUInstanceID != 5 {
			t.Errorf("cycle %d: the MIG GPU without a minor lost its instances: %+v", cycle, g.MIG)
		}
	}
	for _, uuid := range []string{"GPU-b", "GPU-m"} {
		if n := strings.Count(logs.String(), "uuid="+uuid); n != 1 {
			t.Errorf("%s named in %d log lines, want 1:\n%s", uuid, n, logs.String())
		}
	}
	if n := len(unsupported.dev.GetMinorNumberCalls()); n != 1 {
		t.Errorf("GetMinorNumber called %d times on a GPU without one, want 1 (no re-enumeration)", n)
	}
}
