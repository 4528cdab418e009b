package advise

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestWorkloadName(t *testing.T) {
	for _, c := range []struct {
		pod  string
		meta *Pod
		want string
	}{
		{"web-7d4b9c8f6d-x2q4z", nil, "web"},            // Deployment
		{"llm-serve-5c6b7d8f9-bcdfg", nil, "llm-serve"}, // Deployment, 9-char hash
		{"db-0", nil, "db"},                             // StatefulSet
		{"trainer-12", nil, "trainer"},                  // StatefulSet
		{"backfill-x2q4z", nil, "backfill"},             // Job
		{"train-28391230-x7k2p", nil, "train"},          // CronJob's Job
		{"agent-x7k2p", nil, "agent"},                   // DaemonSet
		{"llm-serve", nil, "llm-serve"},                 // "serve" has a vowel: not generated
		{"notebook-alice", nil, "notebook-alice"},       // a person's name stays
		{"solo", nil, "solo"},                           // bare pod
		{"web-7d4b9c8f6d-x2q4z", &Pod{Owner: "ReplicaSet/web-7d4b9c8f6d"}, "web"},
		{"whatever", &Pod{Owner: "StatefulSet/db"}, "db"},
		{"batch-abc", &Pod{Owner: "Job/batch"}, "batch"},
		{"train-28391230-x7k2p", &Pod{Owner: "Job/train-28391230"}, "train"}, // a CronJob's Job
		{"x", &Pod{}, "x"},                                                   // metadata without an owner
	} {
		if got := WorkloadName(c.pod, c.meta); got != c.want {
			t.Errorf("WorkloadName(%q, %+v) = %q, want %q", c.pod, c.meta, got, c.want)
		}
	}
}

func TestParseServiceTime(t *testing.T) {
	for in, want := range map[string]time.Duration{"10ms": 10 * time.Millisecond, " 2.5ms ": 2500 * time.Microsecond, "1s": time.Second, "1h": time.Hour} {
		if got, err := ParseServiceTime(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10", "ten ms", "-1ms", "0s", "500ns", "2h", "1e3ms", strings.Repeat("9", 40) + "ms"} {
		if d, err := ParseServiceTime(in); err == nil || !strings.Contains(err.Error(), ServiceTimeAnnotation) {
			t.Errorf("%q: accepted as %v (err %v)", in, d, err)
		}
	}
}

// FuzzParseServiceTime: the annotation is written by tenants. Any text
// gives a duration within bounds or an error naming the annotation;
// never a panic, never a zero.
func FuzzParseServiceTime(f *testing.F) {
	for _, s := range []string{"10ms", "1.5s", "", "0", "-5ms", "1h1m", "9223372036854775807ns", "1µs", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseServiceTime(s)
		if err != nil {
			if !strings.Contains(err.Error(), ServiceTimeAnnotation) {
				t.Fatalf("%q: error %v does not name the annotation", s, err)
			}
			if !utf8.ValidString(err.Error()) && utf8.ValidString(s) {
				t.Fatalf("error not UTF-8")
			}
			return
		}
		if d < minServiceTime || d > maxServiceTime {
			t.Fatalf("%q: accepted %v", s, d)
		}
	})
}

// FuzzWorkloadName: any pod name gives a non-empty prefix of itself.
func FuzzWorkloadName(f *testing.F) {
	for _, s := range []string{"web-7d4b9c8f6d-x2q4z", "db-0", "-", "a-bcdfg", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := WorkloadName(s, nil)
		if !strings.HasPrefix(s, w) || (s != "" && w == "") {
			t.Fatalf("%q -> %q", s, w)
		}
	})
}

// TestPlanProperties: on random fleets, no recommendation saves more than
// its workloads held, after never exceeds before except for keep (equal),
// no consolidation spans two teams or includes a noisy workload, and the
// savings add up.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	saved := mins
	mins = 24 * 60 // a day keeps this fast
	defer func() { mins = saved }()
	for trial := range 15 {
		var rs []replica
		n := 1 + rng.IntN(10)
		models := []string{"A100-SXM4-80GB", "H100-SXM5-80GB", "L4"}
		for i := range n {
			level, jitter := rng.Float64()*rng.Float64(), rng.Float64()*0.2
			team := []string{"a", "b", "c"}[rng.IntN(3)]
			rs = append(rs, replica{team: team, ns: team, pod: []string{"svc", "job", "nb"}[rng.IntN(3)] + "-" + string(rune('0'+i)),
				model: models[rng.IntN(3)], mode: "exclusive", share: []float64{1, 0.5, 1.0 / 7}[rng.IntN(3)],
				use: func(m int) float64 { return min(1, level+jitter*float64(m%7)/7) }, memMiB: rng.Float64() * 30000})
		}
		a, _ := New(nov, nov.Add(24*time.Hour), nil, Options{})
		for r := range rowsOf(rs) {
			if err := a.AddRow(r); err != nil {
				t.Fatal(err)
			}
		}
		p, err := a.Plan(book(t))
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, r := range p.Recommendations {
			sum += r.SavingMinor
			if r.SavedHours.Cmp(r.HeldHours) > 0 || r.SavedHours.Sign() < 0 || r.SavingMinor < 0 {
				t.Fatalf("trial %d: %+v", trial, r)
			}
			if r.Kind != Keep && r.AfterGPUs >= r.BeforeGPUs-1e-9 && r.Kind != Reclaim {
				t.Fatalf("trial %d: %s does not reduce: %v -> %v", trial, r.Kind, r.BeforeGPUs, r.AfterGPUs)
			}
			if r.Kind == Consolidate && r.Namespace == "" {
				t.Fatalf("trial %d: consolidation across namespaces/teams: %+v", trial, r)
			}
		}
		if sum != p.SavingMinor || p.SavingMinor > p.ChargedMinor {
			t.Fatalf("trial %d: savings %d (sum %d), charged %d", trial, p.SavingMinor, sum, p.ChargedMinor)
		}
	}
}
