package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// randomProc has segments on whole milliseconds so a 1ms step reference is
// exact.
func randomProc(r *rand.Rand, pid uint32, horizon int) *proc {
	var busy []scenario.Segment
	for t := r.IntN(50); t < horizon; {
		l := 1 + r.IntN(40)
		f := []float64{0, 0.1, 0.25, 0.5, 0.8, 1}[r.IntN(6)]
		busy = append(busy, seg(time.Duration(t)*ms, time.Duration(min(t+l, horizon))*ms, f))
		t += l + r.IntN(30)
	}
	p := &proc{pid: pid}
	if err := p.setSegments(busy); err != nil {
		panic(err)
	}
	return p
}

// fracAt is the reference: the fraction of p during millisecond i.
func fracAt(p *proc, i int) float64 {
	t := time.Duration(i) * ms
	for _, s := range p.segs {
		if s.from <= t && t < s.to {
			return s.frac
		}
	}
	return 0
}

func TestGroupBusyMatchesStepReference(t *testing.T) {
	const horizon = 3000
	r := rand.New(rand.NewPCG(1, 2))
	g := &group{}
	var procs []*proc
	for i := range 6 {
		p := randomProc(r, uint32(i+1), horizon)
		procs = append(procs, p)
		if p.spanTo > p.spanFrom {
			g.bySpan = append(g.bySpan, p)
		}
	}
	sortBySpan(g)
	var s scratch
	a := 0
	for range 400 {
		// Mostly forward windows, sometimes a jump back (a new DCGM period).
		if r.IntN(10) == 0 {
			a = r.IntN(horizon)
		} else {
			a = min(horizon-1, a+r.IntN(60))
		}
		b := min(horizon+20, a+1+r.IntN(300))
		var wantBusy float64
		wantProc := make(map[uint32]float64)
		for i := a; i < b; i++ {
			var sum float64
			for _, p := range procs {
				f := fracAt(p, i)
				sum += f
				wantProc[p.pid] += f * float64(ms)
			}
			wantBusy += min(1, sum) * float64(ms)
		}
		got := g.busy(&s, slotDCGM, time.Duration(a)*ms, time.Duration(b)*ms, true)
		if math.Abs(got-wantBusy) > 1e-3 {
			t.Fatalf("window [%d,%d)ms: busy %v ns, want %v", a, b, got, wantBusy)
		}
		gotProc := make(map[uint32]float64)
		for _, pt := range s.parts {
			gotProc[pt.p.pid] = pt.ns
		}
		for pid, w := range wantProc {
			if math.Abs(gotProc[pid]-w) > 1e-3 {
				t.Fatalf("window [%d,%d)ms pid %d: %v ns, want %v", a, b, pid, gotProc[pid], w)
			}
		}
	}
}

func TestSetSegmentsRejectsDisorder(t *testing.T) {
	cases := map[string][]scenario.Segment{
		"overlap":  {seg(0, 2*ms, 0.1), seg(ms, 3*ms, 0.1)},
		"reversed": {seg(2*ms, ms, 0.1)},
		"negative": {seg(0, ms, -0.1)},
	}
	for name, busy := range cases {
		if err := (&proc{}).setSegments(busy); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestMIGProfileLookup(t *testing.T) {
	cases := []struct {
		model, profile string
		slices         int
		mem            uint64
		ok             bool
	}{
		{"A100-SXM4-80GB", "1g.10gb", 1, 10240, true},
		{"A100-SXM4-80GB", "3g.40gb", 3, 40960, true},
		{"A100-SXM4-40GB", "1g.5gb+me", 1, 5120, true},
		{"H200-141GB", "7g.141gb", 7, 143771, true},
		{"A100-SXM4-80GB", "1g.5gb", 0, 0, false},
		{"A100-SXM4-80GB", "4c.3g.40gb", 0, 0, false},
		{"V100", "1g.10gb", 0, 0, false},
	}
	for _, c := range cases {
		s, ci, m, _, err := migProfile(c.model, c.profile)
		if (err == nil) != c.ok || s != c.slices || ci != c.slices || m != c.mem {
			t.Errorf("migProfile(%q, %q) = %d, %d, %d, %v; want %d, %d, ok=%v", c.model, c.profile, s, ci, m, err, c.slices, c.mem, c.ok)
		}
	}
	// A compute instance alone in its GPU instance: the GPU instance's
	// slices and memory, its own compute slice.
	if s, ci, m, id, err := migProfile("A100-SXM4-80GB", "1c.3g.40gb"); err != nil || s != 3 || ci != 1 || m != 40960 || id != nvml.GPU_INSTANCE_PROFILE_3_SLICE {
		t.Errorf("migProfile(1c.3g.40gb) = %d, %d, %d, %d, %v; want 3, 1, 40960, the 3-slice profile", s, ci, m, id, err)
	}
}
