package allocation

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
)

// twoClusterRows are two fleets of fleetRows, with the same node and GPU
// names, under the clusters east and west.
func twoClusterRows(from time.Time, hours int) []attribution.Row {
	var rows []attribution.Row
	for i, c := range []string{"east", "west"} {
		for _, r := range fleetRows(uint64(11+i), from, hours) {
			r.Cluster = c
			rows = append(rows, r)
		}
	}
	return rows
}

// TestFleetOfTwoClustersIsTheReports: on a ledger of two clusters whose
// nodes share names, the API bills as report does (report.BuildFleet):
// the window's total and every step's are the fleet's bill, grouped by
// cluster each entry is that cluster's own bill, and grouped by cluster
// and team the entries add up to the same totals. On both ledgers.
func TestFleetOfTwoClustersIsTheReports(t *testing.T) {
	from := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for name, st := range stores(t, twoClusterRows(from, 4*24)) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			book := parseBook(t, shared)
			bill := func(from, to time.Time, cluster string) string {
				t.Helper()
				r, err := report.BuildFleet(ctx, st, book, from, to, now, cluster)
				if err != nil {
					t.Fatal(err)
				}
				return r.Money(r.Total)
			}
			const window = "2026-11-03T00:00:00%2B01:00,2026-11-05T00:00:00%2B01:00"
			wFrom := time.Date(2026, 11, 3, 0, 0, 0, 0, book.Location)
			wTo := time.Date(2026, 11, 5, 0, 0, 0, 0, book.Location)
			fleet := bill(wFrom, wTo, "")
			if a := run(t, st, "window="+window+"&aggregate=team"); string(a.Total) != fleet {
				t.Errorf("by team: total %s, the fleet's bill %s", a.Total, fleet)
			}
			a := run(t, st, "window="+window+"&aggregate=cluster")
			if string(a.Total) != fleet {
				t.Errorf("by cluster: total %s, the fleet's bill %s", a.Total, fleet)
			}
			got := map[string]string{}
			for _, e := range a.Sets[0].Entries {
				got[e.Name] = string(e.Total)
			}
			for _, c := range []string{"east", "west"} {
				if want := bill(wFrom, wTo, c); got[c] != want {
					t.Errorf("cluster %s: %s, its own bill %s (entries %v)", c, got[c], want, got)
				}
			}
			if len(got) != 2 {
				t.Errorf("entries %v: want east and west alone", got)
			}
			// Each cluster's teams: the clusters' usage differs, so their
			// teams' totals do (the clusters' totals are their capacity's).
			byClusterTeam := map[string]string{}
			for _, e := range run(t, st, "window="+window+"&aggregate=cluster,team").Sets[0].Entries {
				byClusterTeam[e.Name] = string(e.Total)
			}
			for _, c := range []string{"east", "west"} {
				one := run(t, st, "window="+window+"&aggregate=team&filter=cluster:"+c)
				if want := bill(wFrom, wTo, c); sumEntries(t, one.Sets[0].Entries) != want {
					t.Errorf("filtered to %s: entries add up to %s, its bill %s", c, sumEntries(t, one.Sets[0].Entries), want)
				}
				r, err := report.BuildFleet(ctx, st, book, wFrom, wTo, now, c)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := report.WriteJSON(&buf, r); err != nil {
					t.Fatal(err)
				}
				var raw struct {
					Teams []struct {
						Team  string      `json:"team"`
						Total json.Number `json:"total"`
					} `json:"teams"`
				}
				if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
					t.Fatal(err)
				}
				if len(raw.Teams) != 3 {
					t.Fatalf("cluster %s's bill has %d teams, want 3", c, len(raw.Teams))
				}
				for _, tm := range raw.Teams {
					if got := byClusterTeam[c+"/"+tm.Team]; got != string(tm.Total) {
						t.Errorf("%s/%s: %s, the cluster's bill says %s", c, tm.Team, got, tm.Total)
					}
				}
			}
			steps := run(t, st, "window="+window+"&aggregate=cluster,team&step=day")
			if len(steps.Sets) != 2 {
				t.Fatalf("%d sets, want 2 days", len(steps.Sets))
			}
			for i, s := range steps.Sets {
				d := wFrom.AddDate(0, 0, i)
				if want := bill(d, d.AddDate(0, 0, 1), ""); string(s.Total) != want || sumEntries(t, s.Entries) != want {
					t.Errorf("day %d: set total %s, entries add up to %s, the fleet's bill of the day %s", i, s.Total, sumEntries(t, s.Entries), want)
				}
			}
		})
	}
}

// sumEntries adds up the entries' totals as printed (EUR: two decimals).
func sumEntries(t *testing.T, es []Entry) string {
	t.Helper()
	sum := new(big.Rat)
	for _, e := range es {
		x, ok := new(big.Rat).SetString(string(e.Total))
		if !ok {
			t.Fatalf("entry %s: total %q is not a number", e.Name, e.Total)
		}
		sum.Add(sum, x)
	}
	return sum.FloatString(2)
}

// rowCounter is the ClickHouse ledger counting its Rows calls; every
// other method, its bound finders included, is the store's.
type rowCounter struct {
	*clickhouse.Store
	calls atomic.Int64
}

func (c *rowCounter) Rows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	c.calls.Add(1)
	return c.Store.Rows(ctx, from, to, fn)
}

// TestFleetWindowReadsNoEdgeRows: the window of a fleet of two clusters
// is billed cluster by cluster, and over ClickHouse each cluster's data
// bounds are found in the server: no row is streamed. The bounds are the
// rows' own, on both ledgers: east's first hour starts 10 minutes in,
// west's 20, and both clusters' last hour ends 15 minutes early.
func TestFleetWindowReadsNoEdgeRows(t *testing.T) {
	from := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	rows := twoClusterRows(from, 48)
	last := from.Add(47 * time.Hour)
	for i, r := range rows {
		if r.IntervalStart.Equal(from) {
			late := map[string]time.Duration{"east": 10 * time.Minute, "west": 20 * time.Minute}[r.Cluster]
			rows[i].IntervalStart = r.IntervalStart.Add(late)
		}
		if r.IntervalStart.Equal(last) {
			rows[i].IntervalEnd = r.IntervalEnd.Add(-15 * time.Minute)
		}
	}
	const params = "window=2026-11-01T00:00:00%2B01:00,2026-11-06T00:00:00%2B01:00&aggregate=cluster"
	for name, st := range stores(t, rows) {
		t.Run(name, func(t *testing.T) {
			var c *rowCounter
			if ch, ok := st.(*clickhouse.Store); ok {
				c = &rowCounter{Store: ch}
				st = c
			}
			a := run(t, st, params)
			if a.Window.DataStart != "2026-11-02T01:10:00+01:00" || a.Window.DataEnd != "2026-11-04T00:45:00+01:00" {
				t.Errorf("data from %s to %s, want 2026-11-02T01:10:00+01:00 to 2026-11-04T00:45:00+01:00", a.Window.DataStart, a.Window.DataEnd)
			}
			if len(a.Sets[0].Entries) != 2 {
				t.Errorf("%d entries, want east and west", len(a.Sets[0].Entries))
			}
			if c != nil {
				if n := c.calls.Load(); n != 0 {
					t.Errorf("the window's report streamed rows %d times, want none", n)
				}
			}
		})
	}
}
