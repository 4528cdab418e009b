package scorecard

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture testdata/good is written by hand: three GPUs over two
// 60-second intervals. GPU a is time-sliced (t/a/c measured against its
// used_observable, t/b/c with an edge tolerance and a residual of
// unattributed host time), GPU b is a MIG instance shared by two estimated
// replicas scored as an instance group, GPU c runs one MPS client whose
// used is 2 s off the truth (inside MPS's 3%). Every case below edits it in
// one place and names the check that must notice.

// edit replaces old by new in one fixture file; n is how many times old
// must occur (the fixture changed if it does not).
type edit struct {
	file, old, new string
	n              int
}

func once(file, old, new string) edit { return edit{file, old, new, 1} }

// fixture copies testdata/good into a temporary directory with edits
// applied and returns the directory.
func fixture(t *testing.T, edits ...edit) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"truth.json", "ledger.csv", "flags.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", "good", name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, e := range edits {
			if e.file != name {
				continue
			}
			if got := strings.Count(text, e.old); got != e.n {
				t.Fatalf("fixture %s holds %q %d times, want %d", name, e.old, got, e.n)
			}
			text = strings.ReplaceAll(text, e.old, e.new)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func score(t *testing.T, dir string) Result {
	t.Helper()
	truth, err := ReadTruth(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	return Check(truth, dir)
}

func TestGoodFixturePasses(t *testing.T) {
	res := score(t, fixture(t))
	if !res.OK() {
		t.Fatalf("errors: %q", res.Errors)
	}
	// Only m/p/c is off by more than the 0.5 s floor: 100 s against 102.
	if want := 2.0 / 102; math.Abs(res.WorstUsedErr-want) > 1e-12 {
		t.Errorf("worst used error = %v, want %v", res.WorstUsedErr, want)
	}
}

// Edits that stay within a tolerance or a rule's letter must still pass.
func TestWithinTolerancePasses(t *testing.T) {
	cases := map[string][]edit{
		// 0.2 s off is under the 0.5 s floor.
		"used under the floor": {once("truth.json", `"team": "search", "used": 12}`, `"team": "search", "used": 11.8}`)},
		// 0.4 s off allocated is inside edge_tol 0.5 (the good fixture already is).
		"allocated inside edge_tol": {once("truth.json", `"allocated": 60.4`, `"allocated": 60.45`)},
		// One estimated row is enough for the method check.
		"one estimated row": {once("ledger.csv", "uid-x,c,serving,15,10,20480,900,estimated\n2026-11-01T00:00:00Z", "uid-x,c,serving,15,10,20480,900,measured\n2026-11-01T00:00:00Z")},
		// 0.5 s off is 0.83% of 60: inside 1%.
		"unallocated inside 1%": {once("truth.json", `"unallocated": 60}`, `"unallocated": 60.5}`)},
		// The used of an estimated container is not scored alone.
		"estimated used not scored": {once("truth.json", `"team": "serving", "used": 25}`, `"team": "serving", "used": 35}`)},
	}
	for name, edits := range cases {
		t.Run(name, func(t *testing.T) {
			if res := score(t, fixture(t, edits...)); !res.OK() {
				t.Errorf("errors: %q", res.Errors)
			}
		})
	}
}

// Every check must fail on an input that breaks it, with a message naming
// what broke.
func TestEachCheckFails(t *testing.T) {
	cases := []struct {
		name  string
		edits []edit
		want  string
	}{
		{"usage partition", []edit{once("ledger.csv", ",31,,3600,", ",32,,3600,")},
			"partition broken in 1/6 (interval,gpu) groups"},
		{"allocation partition", []edit{once("ledger.csv", "mig,unallocated,,,,,,30,,,,measured\n2026-11-01T00:00:00Z", "mig,unallocated,,,,,,29,,,,measured\n2026-11-01T00:00:00Z")},
			"partition broken in 1/6 (interval,gpu) groups"},
		{"coverage", []edit{once("truth.json", `"duration": 120`, `"duration": 180`)},
			"gpu GPU-aaaa0000 covered 120.0s of 180s"},
		{"used, default 1%", []edit{once("truth.json", `"team": "search", "used": 12}`, `"team": "search", "used": 12.6}`)},
			"t/b/c: used 12.00 vs truth 12.60 (4.8%)"},
		{"used, mps 3%", []edit{once("truth.json", `"used": 102}`, `"used": 104}`)},
			"m/p/c: used 100.00 vs truth 104.00 (3.8%)"},
		{"used_observable", []edit{once("truth.json", `, "used_observable": 30.0`, ``)},
			"t/a/c: used 30.00 vs truth 31.20 (3.8%)"},
		{"used against used_observable", []edit{once("truth.json", `"used_observable": 30.0`, `"used_observable": 30.6`)},
			"t/a/c: used 30.00 vs truth 31.20 (1.9%)"},
		{"method estimated", []edit{{"ledger.csv", "uid-x,c,serving,15,10,20480,900,estimated", "uid-x,c,serving,15,10,20480,900,measured", 2}},
			"g/x/c: expected method=estimated, got [measured]"},
		{"allocated", []edit{once("truth.json", `"allocated": 120`, `"allocated": 121`)},
			"m/p/c: allocated 120.000 vs truth 121.000"},
		{"edge_tol", []edit{once("truth.json", `"edge_tol": 0.5`, `"edge_tol": 0.3`)},
			"t/b/c: allocated 60.000 vs truth 60.400"},
		{"sharing mode", []edit{once("ledger.csv", ",timeslicing,container,t,a,uid-a,c,search,30,20,", ",exclusive,container,t,a,uid-a,c,search,30,20,")},
			"t/a/c: sharing_mode [exclusive timeslicing] vs timeslicing"},
		{"team in truth", []edit{once("truth.json", `"team": "ads"`, `"team": "search"`)},
			"m/p/c: team [ads] vs search"},
		{"team in ledger", []edit{once("ledger.csv", ",c,search,30,20,", ",c,ads,30,20,")},
			"t/a/c: team [ads search] vs search"},
		{"no rows", []edit{once("truth.json", `"m/p/c"`, `"m/q/c"`)},
			"m/q/c: no ledger rows"},
		{"instance group", []edit{once("truth.json", `"used": 40}`, `"used": 42}`)},
			"instance group [g/x/c g/y/c]: used 40.00 vs 42.00"},
		{"unallocated", []edit{once("truth.json", `"unallocated": 60}`, `"unallocated": 58}`)},
			"gpu GPU-bbbb0000 unallocated 60.00 vs 58.00"},
		{"unattributed", []edit{once("truth.json", `"unattributed": 6}`, `"unattributed": 7}`)},
			"gpu GPU-aaaa0000 unattributed 6.00 vs 7.00"},
		{"expected flag", []edit{once("flags.csv", ",t,b,c,", ",t,b2,c,")},
			"missing flag {kind=idle_allocation namespace=t pod=b}"},
		{"forbidden flag", []edit{once("flags.csv", "-000000000003,m,p,c,", "-000000000003,t,p,c,")},
			`unexpected flag {kind=noisy_neighbour namespace=t}: 1 rows, e.g. pod "p"`},
		{"forbidden flag, kind only", []edit{once("flags.csv", ",noisy_neighbour,", ",starved,")},
			`unexpected flag {kind=starved}: 1 rows`},
		{"ledger column", []edit{once("ledger.csv", ",energy_joules,method\n", ",energy_joules,methd\n")},
			"ledger.csv lacks columns method"},
		{"ledger number", []edit{once("ledger.csv", ",t,a,uid-a,c,search,30,20,", ",t,a,uid-a,c,search,30,abc,")},
			`ledger.csv:2: used_gpu_seconds: "abc" is not a finite number`},
		{"ledger NaN", []edit{once("ledger.csv", ",t,a,uid-a,c,search,30,20,", ",t,a,uid-a,c,search,NaN,20,")},
			`ledger.csv:2: allocated_gpu_seconds: "NaN" is not a finite number`},
		{"ledger time", []edit{{"ledger.csv", "2026-11-01T00:02:00Z,n1,GPU-cccc", "2026-11-01 00:02,n1,GPU-cccc", 4}},
			`gpu GPU-cccc0000: interval_end "2026-11-01 00:02" is not an RFC 3339 time`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := score(t, fixture(t, tc.edits...))
			if !hasError(res, tc.want) {
				t.Errorf("errors %q, want one containing %q", res.Errors, tc.want)
			}
		})
	}
}

func TestMissingOutputFiles(t *testing.T) {
	for name, want := range map[string]string{"ledger.csv": "no ledger.csv", "flags.csv": "no flags.csv"} {
		dir := fixture(t)
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if res := score(t, dir); !hasError(res, want) {
			t.Errorf("without %s: errors %q, want %q", name, res.Errors, want)
		}
	}
}

func TestEmptyLedgerFails(t *testing.T) {
	dir := fixture(t)
	header := strings.Join(LedgerColumns, ",") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "ledger.csv"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := score(t, dir); !hasError(res, "ledger.csv is empty") {
		t.Errorf("errors %q", res.Errors)
	}
}

func TestBadTruthIsRejected(t *testing.T) {
	cases := []struct {
		name string
		edit edit
		want string
	}{
		{"no duration", once("truth.json", `"duration": 120,`, ``), "duration: missing"},
		{"no expect_flags", once("truth.json", `"expect_flags": [{"kind": "idle_allocation", "namespace": "t", "pod": "b"}],`, ``), "expect_flags: missing"},
		{"no team", once("truth.json", `, "team": "ads"`, ``), `containers["m/p/c"].team: missing`},
		{"flag value not text", once("truth.json", `"pod": "b"`, `"pod": 7`), "cannot parse truth"},
		{"group without used", once("truth.json", `, "used": 40}`, `}`), "instance_groups[0]: want members and used"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t, tc.edit)
			_, err := ReadTruth(filepath.Join(dir, "truth.json"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadTruth error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func hasError(res Result, want string) bool {
	for _, e := range res.Errors {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}
