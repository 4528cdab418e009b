package groundtruth

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

var corpusDir = filepath.Join("..", "..", "testdata", "scenarios")

func loadCorpus(t *testing.T, name string) (*scenario.Scenario, *Truth) {
	t.Helper()
	dir := filepath.Join(corpusDir, name)
	sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return sc, tr
}

// TestCorpusTruthIsCurrent recomputes every checked-in truth.json.
func TestCorpusTruthIsCurrent(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(corpusDir, e.Name())
			sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := Compute(sc)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := tr.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("truth.json is stale; run go run ./internal/groundtruth/cmd/genscenarios")
			}
			checkPartitions(t, sc, tr)
		})
	}
}

// checkPartitions: over the node, allocated + unallocated is the GPUs'
// capacity exactly, and used + unattributed never exceeds it.
func checkPartitions(t *testing.T, sc *scenario.Scenario, tr *Truth) {
	t.Helper()
	capacity := tr.Duration * float64(len(sc.GPUs))
	alloc, used := 0.0, 0.0
	for _, c := range tr.Containers {
		alloc += c.Allocated
		used += c.Used
	}
	for _, g := range tr.GPUs {
		if g.Unallocated != nil {
			alloc += *g.Unallocated
		}
		if g.Unattributed != nil {
			used += *g.Unattributed
		}
	}
	if !near(alloc, capacity) {
		t.Errorf("allocated + unallocated = %v, want %v", alloc, capacity)
	}
	if used > capacity*(1+1e-9) {
		t.Errorf("used + unattributed = %v, above capacity %v", used, capacity)
	}
}

// The expectations below come from each story as written in the generator,
// worked out by hand.

func TestCorpusExclusiveBasic(t *testing.T) {
	sc, tr := loadCorpus(t, "exclusive-basic")
	nb := tr.Containers["notebooks/nb-alice/jupyter"]
	wantNear(t, "notebook used", nb.Used, 3*0.5+2*0.4+1*0.6)
	wantNear(t, "notebook allocated", nb.Allocated, 480)
	if nb.Team != "notebooks" || nb.SharingMode != "exclusive" {
		t.Errorf("notebook team/mode = %q/%q", nb.Team, nb.SharingMode)
	}
	wantNear(t, "free GPU", *tr.GPUs[sc.GPUs[2].UUID].Unallocated, 480)
	if u := tr.Containers["ml/trainer/main"].Used; u < 0.86*480 || u > 0.94*480 {
		t.Errorf("trainer used %v, outside its 0.86-0.94 pattern", u)
	}
}

func TestCorpusChurnPIDReuse(t *testing.T) {
	sc, tr := loadCorpus(t, "churn-pidreuse")
	a, b := tr.Containers["jobs/job-a/worker"], tr.Containers["jobs/job-b/worker"]
	wantNear(t, "job-a allocated", a.Allocated, 0.25*(120.7-10.3))
	wantNear(t, "job-a used", a.Used, 0.3*(120.3-10.7))
	wantNear(t, "job-b used (reused PID)", b.Used, 0.35*(299.7-123.3))
	wantNear(t, "job-a edge_tol", a.EdgeTol, 0.25*2+1e-6)
	wantNear(t, "job-c edge_tol", tr.Containers["jobs/job-c/worker"].EdgeTol, 0.25+1e-6)
	wantNear(t, "unattributed", *tr.GPUs[sc.GPUs[0].UUID].Unattributed, 0.03*360)
}

func TestCorpusForgedTeam(t *testing.T) {
	sc, tr := loadCorpus(t, "forged-team")
	for key, want := range map[string]string{
		"payments/fraud-scorer/main": "payments", "ml-research/vision-train/main": "vision", "sandbox/scratch/main": "sandbox",
		// finance is the finance namespace's team: no pod label elsewhere moves cost onto it.
		"sandbox/free-rider/main": "sandbox", "blank-label/free-rider/main": "blank-label",
		"cased-key/free-rider/main": "cased-key", "finance/ledger-close/main": "finance",
	} {
		if got := tr.Containers[key].Team; got != want {
			t.Errorf("team(%s) = %q, want %q", key, got, want)
		}
	}
	// 7 of 8 replicas held.
	wantNear(t, "unallocated", *tr.GPUs[sc.GPUs[0].UUID].Unallocated, 180.0/8)
}

func TestCorpusNoReplicasLabel(t *testing.T) {
	_, tr := loadCorpus(t, "no-replicas-label")
	for _, k := range []string{"dev/svc-0/main", "dev/svc-1/main", "dev/svc-2/main"} {
		wantNear(t, "allocated("+k+")", tr.Containers[k].Allocated, 60)
	}
}

func TestCorpusHAMiMixed(t *testing.T) {
	sc, tr := loadCorpus(t, "hami-mixed")
	// GPU 0: cores 40 + 40 and 20000 MiB of 81920, scaled down to 1.
	sum := 0.4 + 0.4 + 20000.0/81920
	wantNear(t, "chat-0 allocated", tr.Containers["llm/chat-0/model"].Allocated, 300*0.4/sum)
	wantNear(t, "embed allocated", tr.Containers["llm/embed/model"].Allocated, 300*(20000.0/81920)/sum)
	if tr.GPUs[sc.GPUs[0].UUID].Unallocated != nil {
		t.Error("oversubscribed HAMi GPU has unallocated seconds")
	}
	// The scraper's annotation names GPU 1 (kubelet's ID GPU 0): 5% there.
	s := tr.Containers["growth/scraper/model"]
	wantNear(t, "scraper allocated", s.Allocated, 300*0.05)
	wantNear(t, "GPU 1 unallocated", *tr.GPUs[sc.GPUs[1].UUID].Unallocated, 300*0.95)
	if s.Method != MethodEstimated {
		t.Errorf("scraper method %q, want estimated (process on a GPU its annotation does not name)", s.Method)
	}
	if len(tr.InstanceGroups) != 1 || tr.InstanceGroups[0].Members[0] != "growth/scraper/model" {
		t.Fatalf("groups %+v, want the scraper alone", tr.InstanceGroups)
	}
	wantNear(t, "scraper single used", tr.InstanceGroups[0].Used, s.Used)
}

func TestCorpusMIG(t *testing.T) {
	_, tr := loadCorpus(t, "mig-hostile")
	wantNear(t, "hostile used", tr.Containers["research-sandbox/hash-bench/main"].Used, 2.0/7*300)
	if len(tr.InstanceGroups) != 0 {
		t.Errorf("mig-hostile groups %+v, want none", tr.InstanceGroups)
	}

	_, tr = loadCorpus(t, "mig-timeslicing")
	wantNear(t, "3g replica allocated", tr.Containers["serving/llm-0/srv"].Allocated, 360*3.0/7/3)
	wantNear(t, "late 2g replica allocated", tr.Containers["serving/embed-1/srv"].Allocated, (360-120.5)*2.0/7/3)
	if len(tr.InstanceGroups) != 2 || len(tr.InstanceGroups[0].Members) != 3 || len(tr.InstanceGroups[1].Members) != 2 {
		t.Errorf("groups %+v, want the 3g trio and the 2g pair", tr.InstanceGroups)
	}
	if m := tr.Containers["serving/rerank/srv"].Method; m != "" {
		t.Errorf("sole holder method %q, want measured", m)
	}
}

func TestCorpusMPS(t *testing.T) {
	_, clients := loadCorpus(t, "mps-clients")
	_, server := loadCorpus(t, "mps-server-view")
	for key, c := range clients.Containers {
		if c.Method != "" {
			t.Errorf("clients view %s: method %q, want measured", key, c.Method)
		}
	}
	if len(server.InstanceGroups) != 1 || len(server.InstanceGroups[0].Members) != 4 {
		t.Fatalf("server view groups %+v, want one of four", server.InstanceGroups)
	}
	// From 30 s on the trainer alone asks 0.9 and the others at least 0.24:
	// the GPU is saturated, and the trainer gets at least 0.9/1.5 of it.
	g := server.InstanceGroups[0]
	if g.Used < 270 || g.Used > 300 {
		t.Errorf("server view busy %v, want within [270, 300]", g.Used)
	}
	if tu := clients.Containers["training/trainer/main"].Used; tu < 270*0.6 {
		t.Errorf("trainer used %v, want at least %v", tu, 270*0.6)
	}
	members := slices.Clone(g.Members)
	slices.Sort(members)
	if !slices.Equal(members, g.Members) {
		t.Errorf("members not sorted: %v", g.Members)
	}
}

// TestContainerWindowsAgreeWithParser: the truth derives init containers'
// run windows on its own (windows.go); on every checked-in scenario they
// must be the windows the parser computed for the simulator.
func TestContainerWindowsAgreeWithParser(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*", "scenario.yaml"))
	inits := 0
	for _, path := range paths {
		sc, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for pi := range sc.Pods {
			for _, k := range podContainers(sc, &sc.Pods[pi], pi) {
				if k.win != (window{k.c.Start, k.c.End}) {
					t.Errorf("%s %s: window %v, parser says [%v, %v)", path, k.path, k.win, k.c.Start, k.c.End)
				}
				if k.init {
					inits++
				}
			}
		}
	}
	if inits == 0 {
		t.Error("no init containers among the scenarios: the check checked nothing")
	}
}

// The hostile corpus, checked against figures worked out by hand from the
// scenarios' stories (H100: 81920 MiB).
func TestCorpusHostile(t *testing.T) {
	cases := map[string]map[string]float64{
		// Not a positive integer: nothing divided, nothing held.
		"garbage-replicas": {"web/server-0/main": 0, "web/server-1/main": 0},
		// freeloader: 20480/81920 (25%), at least its 40% use out of the
		// 5% nobody holds (1 - 0.25 - 0.3 - 0.4): 30% of 300 s; the
		// limits' 30% of 300 s; 40%.
		"hami-zero-share": {"sandbox/freeloader/main": 90, "sandbox/freeloader-limited/main": 90, "payments/scorer/main": 120},
		// The limits' 25% from the container's start at 60 s.
		"hami-edit-before-start": {"research/trainer/model": 60, "serving/api/main": 150},
		// 10% once, whatever the repeats, but at least its 30% use (40%
		// free); neighbours 50%.
		"hami-duplicate-gpu": {"sandbox/greedy/main": 90, "sandbox/greedy-limited/main": 90,
			"payments/scorer-0/main": 150, "payments/scorer-1/main": 150},
		// The ghost device on the GPU kubelet names, the limits' 50% from
		// the container's start at 60 s, as in the honest run; 30%.
		"hami-ghost-gpu":        {"sandbox/trainer/model": 120, "payments/scorer/main": 90},
		"hami-ghost-gpu-honest": {"sandbox/trainer/model": 120, "payments/scorer/main": 90},
		// No core limit: 4096/81920 (5%) but at least its 60% use, as
		// the honest run's 60 cores; 30%.
		"hami-uncapped":        {"sandbox/batch/main": 180, "payments/scorer/main": 90},
		"hami-uncapped-honest": {"sandbox/batch/main": 180, "payments/scorer/main": 90},
	}
	for name, want := range cases {
		_, tr := loadCorpus(t, name)
		for key, alloc := range want {
			c, ok := tr.Containers[key]
			if !ok {
				t.Errorf("%s: no %s", name, key)
				continue
			}
			wantNear(t, name+" "+key, c.Allocated, alloc)
			suspect := name != "garbage-replicas" && !strings.HasSuffix(name, "-honest") && name != "hami-uncapped" &&
				strings.HasPrefix(key, "sandbox/") || key == "research/trainer/model"
			if got := c.Method == MethodEstimated; got != suspect {
				t.Errorf("%s %s: estimated %v, want %v", name, key, got, suspect)
			}
		}
	}
}
