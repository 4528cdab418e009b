package quota

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestResource(t *testing.T) {
	for _, c := range []struct {
		ext, model, want string
		ok               bool
	}{
		{"nvidia.com/gpu", "", "gpu", true},
		{"nvidia.com/gpu", " A100-SXM4-80GB ", "A100-SXM4-80GB", true},
		{"nvidia.com/mig-1g.10gb", "", "mig-1g.10gb", true},
		{"nvidia.com/mig-1c.3g.40gb", "", "mig-1c.3g.40gb", true},
		{"nvidia.com/mig-9g.10gb", "", "", false},
		{"nvidia.com/mig-", "", "", false},
		{"cpu", "", "", false},
		{"amd.com/gpu", "", "", false},
	} {
		got, ok := Resource(c.ext, c.model)
		if got != c.want || ok != c.ok {
			t.Errorf("Resource(%q, %q) = %q, %v; want %q, %v", c.ext, c.model, got, ok, c.want, c.ok)
		}
	}
}

func TestWeight(t *testing.T) {
	for res, want := range map[string]*big.Rat{
		"gpu": big.NewRat(1, 1), "H100-SXM5-80GB": big.NewRat(1, 1),
		"mig-1g.10gb": big.NewRat(1, 7), "mig-3g.40gb": big.NewRat(3, 7), "mig-1c.3g.40gb": big.NewRat(1, 7),
	} {
		got, err := Weight(res)
		if err != nil || got.Cmp(want) != 0 {
			t.Errorf("Weight(%q) = %v, %v; want %v", res, got, err, want)
		}
	}
	if _, err := Weight("mig-0g.1gb"); err == nil {
		t.Error("Weight of a profile that does not parse: want an error")
	}
}

func TestValidateNamesTheObject(t *testing.T) {
	good := Entry{Key: Key{SourceKueue, "team-a-cq", "gpu"}, Team: "a", Milli: 4000}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]Entry{
		"source":   {Key: Key{"slurm", "q", "gpu"}, Team: "a", Milli: 1},
		"team":     {Key: Key{SourceKueue, "q", "gpu"}, Milli: 1},
		"negative": {Key: Key{SourceKueue, "q", "gpu"}, Team: "a", Milli: -1},
		"huge":     {Key: Key{SourceKueue, "q", "gpu"}, Team: "a", Milli: MaxMilli + 1},
		"limit":    {Key: Key{SourceKueue, "q", "gpu"}, Team: "a", LimitMilli: MaxMilli + 1},
		"profile":  {Key: Key{SourceKueue, "q", "mig-8g.1gb"}, Team: "a", Milli: 1},
	} {
		err := e.Validate()
		if err == nil {
			t.Errorf("%s: want an error", name)
			continue
		}
		if name != "team" && !strings.Contains(err.Error(), "q") {
			t.Errorf("%s: %v does not name the object", name, err)
		}
	}
}

func TestEntryGPUs(t *testing.T) {
	e := Entry{Key: Key{SourceResourceQuota, "ns", "mig-1g.10gb"}, Team: "a", Milli: 14000}
	if got := e.GPUs(); got != 2 {
		t.Errorf("14 x 1g.10gb = %v GPUs, want 2", got)
	}
}

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func TestDiff(t *testing.T) {
	a := Entry{Key: Key{SourceKueue, "cq-a", "gpu"}, Team: "a", Milli: 4000}
	b := Entry{Key: Key{SourceKueue, "cq-b", "gpu"}, Team: "b", Milli: 2000}
	prev := map[Key]Entry{a.Key: a, b.Key: b}
	a2 := a
	a2.Milli = 6000
	c := Entry{Key: Key{SourceVolcano, "q-c", "gpu"}, Team: "c", Milli: 1000}
	got := Diff(prev, []Entry{c, a2}, t0)
	want := []Change{
		{At: t0, Entry: a2},
		{At: t0, Entry: Entry{Key: b.Key, Team: "b"}, Deleted: true},
		{At: t0, Entry: c},
	}
	if len(got) != len(want) {
		t.Fatalf("Diff = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := Diff(map[Key]Entry{a.Key: a}, []Entry{a}, t0); len(d) != 0 {
		t.Errorf("nothing changed, Diff = %+v", d)
	}
}

// TestIntervalsHand: a quota set in October (before the period), raised
// on 11-10 12:00, deleted on 11-20; another created on 11-25 and still
// there at the end; a change after the period is ignored.
func TestIntervalsHand(t *testing.T) {
	k := Key{SourceKueue, "cq-a", "gpu"}
	k2 := Key{SourceResourceQuota, "ns-b", "mig-1g.10gb"}
	from, to := t0, t0.AddDate(0, 1, 0)
	at := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	changes := []Change{
		{At: at(10, 12), Entry: Entry{Key: k, Team: "a", Milli: 6000}},
		{At: time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC), Entry: Entry{Key: k, Team: "a", Milli: 4000}},
		{At: at(20, 0), Entry: Entry{Key: k, Team: "a"}, Deleted: true},
		{At: at(25, 0), Entry: Entry{Key: k2, Team: "b", Milli: 7000}},
		{At: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Entry: Entry{Key: k2, Team: "b", Milli: 1000}},
	}
	got := Intervals(changes, from, to)
	want := []Interval{
		{Entry: Entry{Key: k, Team: "a", Milli: 4000}, From: from, To: at(10, 12)},
		{Entry: Entry{Key: k, Team: "a", Milli: 6000}, From: at(10, 12), To: at(20, 0)},
		{Entry: Entry{Key: k2, Team: "b", Milli: 7000}, From: at(25, 0), To: to},
	}
	// Sorted by key: kueue before resourcequota.
	if len(got) != len(want) {
		t.Fatalf("Intervals = %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i].Entry != want[i].Entry || !got[i].From.Equal(want[i].From) || !got[i].To.Equal(want[i].To) {
			t.Errorf("interval %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// GPU-seconds by hand: 4 GPUs x (9.5 days) + 6 x 9.5 days + 7 x 1/7 x 6 days.
	wantSecs := []int64{4*9*86400 + 4*12*3600, 6 * (9*86400 + 12*3600), 1 * 6 * 86400}
	for i, iv := range got {
		s, err := iv.GPUSeconds()
		if err != nil || s.Cmp(big.NewRat(wantSecs[i], 1)) != 0 {
			t.Errorf("interval %d: %v GPU-seconds (%v), want %d", i, s, err, wantSecs[i])
		}
	}
	if iv := Intervals(changes, to, from); iv != nil {
		t.Errorf("empty period: %+v", iv)
	}
}

func TestState(t *testing.T) {
	k := Key{SourceKAI, "leaf", "gpu"}
	st := State([]Change{
		{At: t0.Add(time.Hour), Entry: Entry{Key: k, Team: "a"}, Deleted: true},
		{At: t0, Entry: Entry{Key: k, Team: "a", Milli: 500}},
	})
	if len(st) != 0 {
		t.Errorf("created then deleted: state %+v", st)
	}
}
