package advise

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// November 2026: 30 days of minutes, UTC.
var (
	nov  = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec  = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mins = int(dec.Sub(nov) / time.Minute) // 43,200
)

func book(t testing.TB) *pricebook.Book {
	t.Helper()
	b, err := pricebook.Parse("test.yaml", []byte("currency: USD\npolicy: allocation\nrates:\n  A100-SXM4-80GB: 2.40\n  H100-SXM5-80GB: 4.123456789\ndefaultRate: 1.10\n"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replica describes one container holding one slice for the whole month.
type replica struct {
	team, ns, pod, model, mode string
	share                      float64             // GPUs held
	use                        func(m int) float64 // GPUs used in minute m
	memMiB                     float64
}

func rowsOf(rs []replica) func(func(attribution.Row) bool) {
	return func(yield func(attribution.Row) bool) {
		for m := range mins {
			start := nov.Add(time.Duration(m) * time.Minute)
			for i, r := range rs {
				if !yield(attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: "node-1",
					GPUUUID: fmt.Sprintf("GPU-%d", i), GPUModel: r.model, SliceID: fmt.Sprintf("GPU-%d", i), SharingMode: r.mode,
					Kind: attribution.KindContainer, Namespace: r.ns, Pod: r.pod, PodUID: r.pod + "-uid", Container: "main", Team: r.team,
					AllocatedGPUSeconds: 60 * r.share, UsedGPUSeconds: 60 * r.use(m), MemoryMiBSeconds: 60 * r.memMiB, Method: "measured"}) {
					return
				}
			}
		}
	}
}

func advise(t testing.TB, rs []replica, pods []Pod, findings []attribution.Finding) *Plan {
	t.Helper()
	a, err := New(nov, dec, pods, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rowsOf(rs) {
		if err := a.AddRow(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range findings {
		if err := a.AddFinding(f); err != nil {
			t.Fatal(err)
		}
	}
	p, err := a.Plan(book(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// light is 3% of a GPU on even minutes, 8% on odd ones: p99 8%.
func light(m int) float64 { return []float64{0.03, 0.08}[m%2] }

func sevenReplicas(team, ns string) []replica {
	var rs []replica
	for i := range 7 {
		rs = append(rs, replica{team: team, ns: ns, pod: fmt.Sprintf("infer-7d4b9c8f6d-%cxz2q", "bcdfghj"[i]),
			model: "A100-SXM4-80GB", mode: "exclusive", share: 1, use: light, memMiB: 5000})
	}
	return rs
}

func find(p *Plan, workload string) []Recommendation {
	var out []Recommendation
	for _, r := range p.Recommendations {
		if slices.Contains(r.Workloads, workload) {
			out = append(out, r)
		}
	}
	return out
}

// TestSevenIdleishReplicas: seven replicas of one Deployment, each on a
// whole A100 using at most 8%, go onto one GPU. Truth by hand: they held
// 7 x 720 = 5040 GPU-hours; one GPU for the month is 720; 4320 h x 2.40 =
// 10,368.00 USD. The joint p99 is 7 x 0.08 = 0.56 GPU, x1.25 = 0.70: one
// GPU under MPS; seven MIG 1g.10gb (0.08 x 1.25 = 0.1 <= 1/7) is also one
// GPU, named as the isolated alternative.
func TestSevenIdleishReplicas(t *testing.T) {
	p := advise(t, sevenReplicas("search", "search"), nil, nil)
	rs := find(p, "search/infer")
	if len(rs) != 1 {
		t.Fatalf("%d recommendations for search/infer, want 1: %+v", len(rs), p.Recommendations)
	}
	r := rs[0]
	if r.Kind != Consolidate || r.Replicas != 7 || r.BeforeGPUs != 7 || r.AfterGPUs != 1 {
		t.Fatalf("got %s, %d replicas, %v -> %v GPUs; want consolidate 7 replicas 7 -> 1", r.Kind, r.Replicas, r.BeforeGPUs, r.AfterGPUs)
	}
	if !strings.Contains(r.After, "MPS") || !strings.Contains(strings.Join(r.Evidence, " "), "MIG") {
		t.Errorf("after %q evidence %q: want MPS with the MIG alternative", r.After, r.Evidence)
	}
	if r.HeldHours.RatString() != "5040" || r.SavedHours.RatString() != "4320" || r.SavingMinor != 1036800 {
		t.Errorf("held %s saved %s h, saving %d cents; want 5040, 4320, 1036800", r.HeldHours.RatString(), r.SavedHours.RatString(), r.SavingMinor)
	}
	// The replay: 0.56 GPU at most on one GPU never exceeds it.
	if r.Contention.Minutes != 0 || r.Contention.Of != mins {
		t.Errorf("contention %+v, want 0 of %d minutes", r.Contention, mins)
	}
	if p.SavingMinor != 1036800 || p.ChargedMinor != 1209600 { // 5040 x 2.40
		t.Errorf("plan saving %d, charged %d", p.SavingMinor, p.ChargedMinor)
	}
	if r.Latency != nil || !strings.Contains(r.LatencyNote, "utilisation-based only") {
		t.Errorf("no annotation: latency %+v note %q", r.Latency, r.LatencyNote)
	}
}

// TestHostileNeverMPS: a team's noisy neighbour is never packed under MPS
// with the others. Without its noisy_neighbour finding, the team's seven
// light replicas and the miner (15%) would share one GPU under MPS
// (joint p99 0.56 + 0.15 = 0.71, x1.25 = 0.89 GPU, against 1 + 2/7 GPU
// of MIG): 5760 - 720 = 5040 h x 2.40 = 12,096.00. With the finding the
// miner gets its own MIG instance (0.15 x 1.25 = 0.1875 GPU: 2g.20gb,
// 2/7; 20,000 MiB fits its 20,480), 720 x 5/7 h x 2.40 = 1234.2857... =
// 1234.29, and the replicas alone go to one GPU: 10,368.00.
func TestHostileNeverMPS(t *testing.T) {
	rs := append(sevenReplicas("ml", "ml"), replica{team: "ml", ns: "ml", pod: "miner-0", model: "A100-SXM4-80GB", mode: "exclusive", share: 1,
		use: func(m int) float64 { return 0.15 }, memMiB: 20000})
	calm := advise(t, rs, nil, nil)
	if len(calm.Recommendations) != 1 || calm.Recommendations[0].Kind != Consolidate || calm.SavingMinor != 1209600 ||
		!slices.Equal(calm.Recommendations[0].Workloads, []string{"ml/infer", "ml/miner"}) {
		t.Fatalf("without the finding: %+v", calm.Recommendations)
	}
	noisy := attribution.Finding{Start: nov, End: nov.Add(time.Hour), Kind: attribution.FindingNoisyNeighbour, Namespace: "ml", Pod: "miner-0"}
	p := advise(t, rs, nil, []attribution.Finding{noisy})
	for _, r := range p.Recommendations {
		if r.Kind == Consolidate && slices.Contains(r.Workloads, "ml/miner") {
			t.Fatalf("noisy workload consolidated: %+v", r)
		}
	}
	m := find(p, "ml/miner")
	if len(m) != 1 || m[0].Kind != RightSize || !strings.Contains(m[0].After, "2g.20gb") || m[0].SavingMinor != 123429 {
		t.Fatalf("miner: %+v", m)
	}
	l := find(p, "ml/infer")
	if len(l) != 1 || l[0].Kind != Consolidate || l[0].AfterGPUs != 1 || l[0].SavingMinor != 1036800 {
		t.Fatalf("infer: %+v", l)
	}
	if m[0].Contention.Minutes != 0 {
		t.Errorf("miner contention %+v", m[0].Contention)
	}
	// The finding counts whether it comes before or after the rows.
	a, _ := New(nov, dec, nil, Options{})
	a.AddFinding(noisy)
	for r := range rowsOf(rs) {
		a.AddRow(r)
	}
	early, err := a.Plan(book(t))
	if err != nil || len(find(early, "ml/miner")) != 1 || find(early, "ml/miner")[0].Kind != RightSize {
		t.Errorf("finding before the rows: %v %+v", err, early)
	}
	if len(p.MIG) != 1 || p.MIG[0].Slices != 2 || p.MIG[0].GPUs != 1 {
		t.Errorf("MIG packing %+v", p.MIG)
	}
}

// TestRightSizeFewReplicas: three light replicas fit 3 x MIG 1g.10gb
// (3/7 GPU) better than one whole GPU under MPS: 2160 x 6/7 h x 2.40 =
// 4443.428571... = 4443.43.
func TestRightSizeFewReplicas(t *testing.T) {
	p := advise(t, sevenReplicas("ml", "ml")[:3], nil, nil)
	r := p.Recommendations
	if len(r) != 1 || r[0].Kind != RightSize || !strings.Contains(r[0].After, "3 × MIG 1g.10gb") || r[0].SavingMinor != 444343 {
		t.Fatalf("%+v", r)
	}
}

// TestSaturatedTrainerUnchanged: a trainer using 95% of its H100 stays.
func TestSaturatedTrainerUnchanged(t *testing.T) {
	p := advise(t, []replica{{team: "research", ns: "research", pod: "trainer-0", model: "H100-SXM5-80GB", mode: "exclusive", share: 1,
		use: func(m int) float64 { return 0.9 + 0.05*float64(m%3) }, memMiB: 70000}}, nil, nil)
	if len(p.Recommendations) != 1 || p.Recommendations[0].Kind != Keep || p.SavingMinor != 0 {
		t.Fatalf("%+v", p.Recommendations)
	}
	// 720 h x 4.123456789 = 2968.88888808 -> 2968.89.
	if p.ChargedMinor != 296889 {
		t.Errorf("charged %d, want 296889", p.ChargedMinor)
	}
}

// TestReclaimIdleNotebook: a notebook used on 5% of its minutes (one in
// twenty, at 50%) is reclaimed: all 720 h x 2.40 = 1728.00.
func TestReclaimIdleNotebook(t *testing.T) {
	p := advise(t, []replica{{team: "lab", ns: "lab", pod: "notebook-alice", model: "A100-SXM4-80GB", mode: "exclusive", share: 1,
		use: func(m int) float64 {
			if m%20 == 0 {
				return 0.5
			}
			return 0
		}, memMiB: 1000}}, nil, nil)
	r := p.Recommendations[0]
	if len(p.Recommendations) != 1 || r.Kind != Reclaim || r.SavingMinor != 172800 || r.AfterGPUs != 0 {
		t.Fatalf("%+v", p.Recommendations)
	}
	// The replay says what releasing it loses: the 2160 busy minutes.
	if r.Contention.Minutes != mins/20 || math.Abs(r.Contention.MaxExcess-0.5) > 1e-6 {
		t.Errorf("contention %+v", r.Contention)
	}
}

// TestNoMPSAcrossTeams: two teams' light replicas on the same model are
// never consolidated together.
func TestNoMPSAcrossTeams(t *testing.T) {
	rs := append(sevenReplicas("a", "ns-a")[:2], sevenReplicas("b", "ns-b")[:2]...)
	p := advise(t, rs, nil, nil)
	for _, r := range p.Recommendations {
		if r.Kind == Consolidate && (len(r.Workloads) != 1 || r.Namespace == "") {
			t.Errorf("consolidation across teams: %+v", r)
		}
	}
	if len(p.Recommendations) != 2 {
		t.Errorf("%d recommendations, want one per team", len(p.Recommendations))
	}
}

// TestServiceTimeLatency: with the annotation, the consolidation says
// what whatif predicts on one GPU under MPS; a malformed annotation marks
// the recommendation incomplete and gives no latency.
func TestServiceTimeLatency(t *testing.T) {
	rs := sevenReplicas("search", "search")
	var pods []Pod
	for _, r := range rs {
		pods = append(pods, Pod{Namespace: r.ns, Name: r.pod, Owner: "ReplicaSet/infer-7d4b9c8f6d",
			Annotations: map[string]string{ServiceTimeAnnotation: "10ms"}})
	}
	p := advise(t, rs, pods, nil)
	r := find(p, "search/infer")[0]
	if r.Latency == nil {
		t.Fatalf("no latency: %q %v", r.LatencyNote, r.Incomplete)
	}
	// 5.5% mean use / 10 ms = 5.5 rps per replica, seven on one card.
	if math.Abs(r.Latency.RatePerReplica-5.5) > 1e-9 || r.Latency.Tenants != 7 || r.Latency.Mode != "mps" {
		t.Errorf("latency %+v", r.Latency)
	}
	if !(r.Latency.P50 >= 0.010*(1-2e-3) && r.Latency.P99 > r.Latency.P50 && r.Latency.P99 < 0.2) {
		t.Errorf("p50 %v p99 %v", r.Latency.P50, r.Latency.P99)
	}
	pods[3].Annotations[ServiceTimeAnnotation] = "ten ms"
	p = advise(t, rs, pods, nil)
	r = find(p, "search/infer")[0]
	if r.Latency != nil || len(r.Incomplete) == 0 || !strings.Contains(r.Incomplete[0], "not a duration") {
		t.Errorf("malformed annotation: latency %+v incomplete %v", r.Latency, r.Incomplete)
	}
}

// TestUnknownModel: a model the book does not price and whose profiles
// are unknown is advised at the default rate, marked incomplete.
func TestUnknownModel(t *testing.T) {
	p := advise(t, []replica{{team: "x", ns: "x", pod: "svc-0", model: "T4", mode: "exclusive", share: 1, use: light, memMiB: 100}}, nil, nil)
	r := p.Recommendations[0]
	if r.Kind != RightSize || !strings.Contains(r.After, "1/8") || len(r.Incomplete) != 2 {
		t.Fatalf("%+v", r)
	}
	// 720 x 7/8 = 630 h x 1.10 = 693.00.
	if r.SavingMinor != 69300 {
		t.Errorf("saving %d, want 69300", r.SavingMinor)
	}
}

func TestEmptyPeriod(t *testing.T) {
	a, err := New(nov, dec, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Plan(book(t)); err == nil || !strings.Contains(err.Error(), "no GPU allocations") {
		t.Errorf("empty period: %v", err)
	}
	if _, err := New(dec, nov, nil, Options{}); err == nil {
		t.Error("reversed period accepted")
	}
	if err := a.AddRow(attribution.Row{Kind: attribution.KindContainer, IntervalStart: nov, IntervalEnd: nov.Add(time.Minute), UsedGPUSeconds: math.NaN()}); err == nil {
		t.Error("NaN row accepted")
	}
}

// TestContentionReplay: three replicas at 8% that burst to 30% one minute
// in 200 are sized on their p99 (8%): MIG 1g.10gb. Replaying the month
// on 1/7 GPU each: 43,200 / 200 = 216 minutes over capacity, each by
// 0.30 - 1/7 = 0.157143 GPU.
func TestContentionReplay(t *testing.T) {
	rs := sevenReplicas("ml", "ml")[:3]
	for i := range rs {
		rs[i].use = func(m int) float64 {
			if m%200 == 0 {
				return 0.30
			}
			return 0.08
		}
	}
	p := advise(t, rs, nil, nil)
	r := p.Recommendations[0]
	if r.Kind != RightSize || !strings.Contains(r.After, "1g.10gb") {
		t.Fatalf("%+v", r)
	}
	want := 0.30 - 1.0/7
	if r.Contention.Minutes != 216 || r.Contention.Of != mins || math.Abs(r.Contention.MaxExcess-want) > 1e-6 || math.Abs(r.Contention.MeanExcess-want) > 1e-6 {
		t.Errorf("contention %+v, want 216 of %d minutes by %.6f", r.Contention, mins, want)
	}
}

// TestHourlyRowsMatchMinuteRows: a ledger written with hourly intervals
// (as the demo's backfill) gives the plan minute rows give when usage is
// steady: rows are spread over the minutes they cover.
func TestHourlyRowsMatchMinuteRows(t *testing.T) {
	rs := sevenReplicas("search", "search")
	for i := range rs {
		rs[i].use = func(int) float64 { return 0.08 }
	}
	byMinute := advise(t, rs, nil, nil)
	a, err := New(nov, dec, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for h := range mins / 60 {
		start := nov.Add(time.Duration(h) * time.Hour)
		for i, r := range rs {
			if err := a.AddRow(attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Hour), Node: "node-1",
				GPUUUID: fmt.Sprintf("GPU-%d", i), GPUModel: r.model, SliceID: fmt.Sprintf("GPU-%d", i), SharingMode: r.mode,
				Kind: attribution.KindContainer, Namespace: r.ns, Pod: r.pod, PodUID: r.pod + "-uid", Container: "main", Team: r.team,
				AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600 * 0.08, MemoryMiBSeconds: 3600 * r.memMiB}); err != nil {
				t.Fatal(err)
			}
		}
	}
	byHour, err := a.Plan(book(t))
	if err != nil {
		t.Fatal(err)
	}
	m, h := byMinute.Recommendations[0], byHour.Recommendations[0]
	if m.Kind != h.Kind || m.Replicas != h.Replicas || m.BeforeGPUs != h.BeforeGPUs || m.AfterGPUs != h.AfterGPUs ||
		m.SavingMinor != h.SavingMinor || m.Contention != h.Contention || h.SavingMinor != 1036800 {
		t.Errorf("minute rows %+v\nhourly rows %+v", m, h)
	}
}

// annotated is the seven light replicas with every pod declaring svc.
func annotated(svc string) ([]replica, []Pod) {
	rs := sevenReplicas("search", "search")
	var pods []Pod
	for _, r := range rs {
		pods = append(pods, Pod{Namespace: r.ns, Name: r.pod, Owner: "ReplicaSet/infer-7d4b9c8f6d",
			Annotations: map[string]string{ServiceTimeAnnotation: svc}})
	}
	return rs, pods
}

// TestHostileServiceTimeBounded: a tenant's 1µs service time (inside the
// annotation's range) makes each replica send 5.5% / 1µs = 55,000 rps:
// seven on one GPU for 10 runs of 10 minutes would be 2.31 billion
// simulated requests. The simulation is capped at 200,000 requests a
// run, at the same rates and service time, and the note says so; 10ms
// stays uncapped.
func TestHostileServiceTimeBounded(t *testing.T) {
	rs, pods := annotated("1us")
	r := find(advise(t, rs, pods, nil), "search/infer")[0]
	l := r.Latency
	if l == nil {
		t.Fatalf("no latency: %q %v", r.LatencyNote, r.Incomplete)
	}
	if math.Abs(l.RatePerReplica-55000) > 1e-6 || l.Tenants != 7 || !l.Capped {
		t.Errorf("latency %+v: want 55,000 rps, 7 tenants, capped", l)
	}
	// Poisson counts: 2 million expected, standard deviation 1,414.
	if l.Requests > 10*200_000+10*1414 || l.Requests < 10*200_000-10*1414 {
		t.Errorf("simulated %d requests, want about 2,000,000 (uncapped: 2.31e9)", l.Requests)
	}
	// 200,000 / (7 x 55,000 rps) = 519.48 ms a run.
	perRun := 200_000 / (7 * 55000.0)
	if want := time.Duration(perRun * float64(time.Second)); l.Simulated < want-time.Microsecond || l.Simulated > want+time.Microsecond {
		t.Errorf("simulated %s a run, want %s", l.Simulated, want)
	}
	if !strings.Contains(r.LatencyNote, "capped at 200000 requests a run") || !strings.Contains(r.LatencyNote, "2.31e+08") {
		t.Errorf("note %q does not say the simulation was capped", r.LatencyNote)
	}
	// MPS: every request takes at least its service time.
	if !(l.P50 >= 1e-6 && l.P99 >= l.P50) || l.ServedFraction < 0.99 {
		t.Errorf("p50 %v p99 %v served %v", l.P50, l.P99, l.ServedFraction)
	}
	rs, pods = annotated("10ms")
	r = find(advise(t, rs, pods, nil), "search/infer")[0]
	// 7 x 5.5 rps x 600 s x 10 runs = 231,000 expected.
	if r.Latency == nil || r.Latency.Capped || r.Latency.Simulated != 10*time.Minute || math.Abs(float64(r.Latency.Requests)-231000) > 10*481 ||
		strings.Contains(r.LatencyNote, "capped") {
		t.Errorf("10ms: latency %+v note %q: want 10 uncapped minutes", r.Latency, r.LatencyNote)
	}
}

// countdown is a context that ends after its Err has been asked n times:
// the simulation asks once a chunk, so it counts the work done.
type countdown struct {
	context.Context
	mu     sync.Mutex
	n, of  int
	done   chan struct{}
	closed bool
}

func newCountdown(n int) *countdown {
	return &countdown{Context: context.Background(), n: n, done: make(chan struct{})}
}

func (c *countdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.of++
	if c.of > c.n {
		if !c.closed {
			close(c.done)
			c.closed = true
		}
		return context.Canceled
	}
	return nil
}

func (c *countdown) Done() <-chan struct{} { return c.done }

func (c *countdown) asked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.of
}

// TestPlanStopsWhenCancelled: a context that ends part-way through the
// latency simulation (after 20 checks; the whole plan makes about 250)
// stops the plan with the context's error, after a few more checks at
// most (one per run in flight), and a context already done plans
// nothing.
func TestPlanStopsWhenCancelled(t *testing.T) {
	rs, pods := annotated("1us")
	a, err := New(nov, dec, pods, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rowsOf(rs) {
		if err := a.AddRow(r); err != nil {
			t.Fatal(err)
		}
	}
	whole := newCountdown(1 << 30)
	if _, err := a.PlanContext(whole, book(t)); err != nil {
		t.Fatal(err)
	}
	ctx := newCountdown(20)
	p, err := a.PlanContext(ctx, book(t))
	if !errors.Is(err, context.Canceled) || p != nil {
		t.Fatalf("plan %v, error %v: want context.Canceled", p != nil, err)
	}
	if n := ctx.asked(); n > 20+4*runtime.GOMAXPROCS(0)+4 || n >= whole.asked() {
		t.Errorf("the plan checked the context %d times after it ended at the 20th (the whole plan: %d)", n, whole.asked())
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.PlanContext(done, book(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}
