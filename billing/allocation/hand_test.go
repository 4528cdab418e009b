package allocation

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// handRows: on 2026-11-02 (UTC), node-1's GPU is held 10:00-12:00 by pod
// ads-a-0 (used half) and unallocated 12:00-13:00; node-2's GPU is held
// half of 10:00-11:00 by search-b-0, the other half unallocated.
func handRows() []attribution.Row {
	at := func(h int) time.Time { return time.Date(2026, 11, 2, h, 0, 0, 0, time.UTC) }
	gpu := func(node, uuid string, h int) attribution.Row {
		return attribution.Row{IntervalStart: at(h), IntervalEnd: at(h + 1), Node: node, GPUUUID: uuid, SliceID: uuid, GPUModel: "A100", SharingMode: "exclusive"}
	}
	ctr := func(r attribution.Row, team, pod string, alloc, used float64) attribution.Row {
		r.Kind, r.Team, r.Namespace, r.Pod, r.PodUID, r.Container = attribution.KindContainer, team, team+"-ns", pod, "uid-"+pod, "main"
		r.AllocatedGPUSeconds, r.UsedGPUSeconds = alloc, used
		return r
	}
	plat := func(r attribution.Row, kind attribution.Kind, alloc, used float64) attribution.Row {
		r.Kind, r.AllocatedGPUSeconds, r.UsedGPUSeconds = kind, alloc, used
		return r
	}
	var rows []attribution.Row
	for h := 10; h < 12; h++ {
		g := gpu("node-1", "GPU-1", h)
		rows = append(rows, ctr(g, "ads", "ads-a-0", 3600, 1800), plat(g, attribution.KindIdle, 0, 1800))
	}
	g := gpu("node-1", "GPU-1", 12)
	rows = append(rows, plat(g, attribution.KindUnallocated, 3600, 0), plat(g, attribution.KindIdle, 0, 3600))
	g = gpu("node-2", "GPU-2", 10)
	rows = append(rows, ctr(g, "search", "search-b-0", 1800, 1800), plat(g, attribution.KindUnallocated, 1800, 0), plat(g, attribution.KindIdle, 0, 1800))
	return rows
}

// TestHandPriced checks pods, nodes and containers against amounts
// priced by hand at 2.00 an hour: ads-a-0 held 2 h (4.00), search-b-0
// half an hour (1.00), 1.5 h nobody held (3.00). With idle: shared the
// 1.5 h go 4:1 by held hours: 1.2 h (2.40) and 0.3 h (0.60).
func TestHandPriced(t *testing.T) {
	const platform = "currency: USD\ntimezone: UTC\npolicy: allocation\nidle: platform\ndefaultRate: \"2.00\"\n"
	const sharedIdle = "currency: USD\ntimezone: UTC\npolicy: allocation\nidle: shared\ndefaultRate: \"2.00\"\n"
	cases := []struct {
		book, params string
		want         map[string]string
	}{
		{platform, "window=2026-11-02,2026-11-03&aggregate=pod",
			map[string]string{"ads-a-0": "4.00", "search-b-0": "1.00", Platform: "3.00"}},
		{platform, "window=2026-11-02,2026-11-03&aggregate=node",
			map[string]string{"node-1": "4.00", "node-2": "1.00", Platform: "3.00"}},
		{platform, "window=2026-11-02,2026-11-03&aggregate=team,container&filter=team:ads",
			map[string]string{"ads/main": "4.00"}},
		{platform, "window=2026-11-02,2026-11-03&aggregate=workload",
			map[string]string{"ads-a": "4.00", "search-b": "1.00", Platform: "3.00"}},
		{sharedIdle, "window=2026-11-02,2026-11-03&aggregate=pod",
			map[string]string{"ads-a-0": "6.40", "search-b-0": "1.60"}},
		{sharedIdle, "window=2026-11-02,2026-11-03&aggregate=namespace,node&filter=namespace:search-ns",
			map[string]string{"search-ns/node-2": "1.60"}},
	}
	for name, st := range stores(t, handRows()) {
		for _, c := range cases {
			book := parseBook(t, c.book)
			v, _ := url.ParseQuery(c.params)
			q, err := Parse(v, book.Location, now)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Run(context.Background(), st, book, q, now)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range a.Sets[0].Entries {
				got[e.Name] = string(e.Total)
			}
			if len(got) != len(c.want) {
				t.Errorf("%s %s: entries %v, want %v", name, c.params, got, c.want)
				continue
			}
			for k, w := range c.want {
				if got[k] != w {
					t.Errorf("%s %s: %s pays %s, want %s (all: %v)", name, c.params, k, got[k], w, got)
				}
			}
		}
		book := parseBook(t, platform)
		v, _ := url.ParseQuery("window=2026-11-02,2026-11-03&aggregate=pod&filter=pod:ads-a-0")
		q, _ := Parse(v, book.Location, now)
		a, err := Run(context.Background(), st, book, q, now)
		if err != nil {
			t.Fatal(err)
		}
		e := a.Sets[0].Entries[0]
		if e.HeldHours != "2.000000" || e.UsedHours != "1.000000" || e.IdleHours != "1.000000" || *e.Efficiency != "0.5000" {
			t.Errorf("%s: ads-a-0 held %s used %s idle %s efficiency %s, want 2, 1, 1, 0.5", name, e.HeldHours, e.UsedHours, e.IdleHours, *e.Efficiency)
		}
		if a.Window.DataStart != "2026-11-02T10:00:00Z" || a.Window.DataEnd != "2026-11-02T13:00:00Z" || !a.Window.Partial {
			t.Errorf("%s: window %+v: want data 10:00 to 13:00, partial", name, a.Window)
		}
	}
}
