package quota_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/quota"
)

// sevenths is each resource's weight in sevenths of a GPU, written here
// from the MIG profiles' compute slices, not taken from quota.Weight.
var sevenths = map[string]int64{
	"gpu":            7,
	"H100-80GB-HBM3": 7,
	"mig-1g.10gb":    1,
	"mig-3g.40gb":    3,
	"mig-1c.3g.40gb": 1,
	"mig-7g.80gb":    7,
}

type teamKey struct {
	quota.Key
	Team string
}

// TestRecordedQuotaIntegratesExactly drives a Recorder over a random
// timeline of quota objects (created, changed, moved to another team,
// deleted, restarts of the recorder in between) on a real ledger file,
// then integrates random periods from what was stored: quota.Intervals'
// GPU-seconds per key and team must equal, exactly, the sum computed here
// second by second from the snapshots themselves (each in force from its
// tick's second to the next tick's).
func TestRecordedQuotaIntegratesExactly(t *testing.T) {
	resources := make([]string, 0, len(sevenths))
	for r := range sevenths {
		resources = append(resources, r)
	}
	sources := quota.Sources()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			// A pool of keys: a few objects with a few resources each.
			var keys []quota.Key
			for i := range 3 + rng.IntN(4) {
				keys = append(keys, quota.Key{
					Source:   sources[rng.IntN(len(sources))],
					Object:   fmt.Sprintf("obj-%d", i%3),
					Resource: resources[(i+rng.IntN(2))%len(resources)],
				})
			}
			path := filepath.Join(t.TempDir(), "ledger.db")
			s := openLedger(t, path)
			w := &world{}
			r := w.recorder(s)
			cur := map[quota.Key]quota.Entry{}
			type tick struct {
				sec  int64
				snap []quota.Entry
			}
			var ticks []tick
			sec := start.Unix()
			for range 25 + rng.IntN(25) {
				sec += 1 + rng.Int64N(200)
				for _, k := range keys {
					switch rng.IntN(6) {
					case 0:
						delete(cur, k)
					case 1, 2:
						e := quota.Entry{Key: k, Team: []string{"ml", "vision", "search"}[rng.IntN(3)],
							Milli: rng.Int64N(64) * 500, LimitMilli: rng.Int64N(3) * 1000}
						cur[k] = e
					}
				}
				var snap []quota.Entry
				for _, e := range cur {
					snap = append(snap, e)
				}
				// The clock is anywhere inside the tick's second.
				w.set(time.Unix(sec, rng.Int64N(int64(time.Second))), snap...)
				if rng.IntN(8) == 0 { // a restart
					s.Close()
					s = openLedger(t, path)
					r = w.recorder(s)
				}
				if _, err := r.Record(context.Background()); err != nil {
					t.Fatal(err)
				}
				ticks = append(ticks, tick{sec, snap})
			}
			first, last := ticks[0].sec, ticks[len(ticks)-1].sec
			for range 15 {
				from := first - 50 + rng.Int64N(last-first+100)
				to := from + rng.Int64N(last+100-from)
				// By hand: every second of [from, to) under the last
				// snapshot taken at or before it.
				want := map[teamKey]int64{} // thousandths x sevenths x seconds
				i := -1
				for x := from; x < to; x++ {
					for i+1 < len(ticks) && ticks[i+1].sec <= x {
						i++
					}
					if i < 0 {
						continue
					}
					for _, e := range ticks[i].snap {
						want[teamKey{e.Key, e.Team}] += e.Milli * sevenths[e.Resource]
					}
				}
				var changes []quota.Change
				f, tt := time.Unix(from, 0), time.Unix(to, 0)
				if err := s.QuotaChanges(context.Background(), f, tt, func(c quota.Change) error {
					changes = append(changes, c)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				got := map[teamKey]*big.Rat{}
				for _, iv := range quota.Intervals(changes, f, tt) {
					gs, err := iv.GPUSeconds()
					if err != nil {
						t.Fatal(err)
					}
					k := teamKey{iv.Key, iv.Team}
					if got[k] == nil {
						got[k] = new(big.Rat)
					}
					got[k].Add(got[k], gs)
				}
				for k, v := range want {
					exact := big.NewRat(v, 7000)
					if g := got[k]; (g == nil && exact.Sign() != 0) || (g != nil && g.Cmp(exact) != 0) {
						t.Errorf("[%d, %d) %+v: %v GPU-seconds from the ledger, %v by hand", from, to, k, g, exact.RatString())
					}
				}
				for k, g := range got {
					if _, ok := want[k]; !ok && g.Sign() != 0 {
						t.Errorf("[%d, %d) %+v: %v GPU-seconds from the ledger, none by hand", from, to, k, g)
					}
				}
			}
		})
	}
}

// TestIntervalsMatchStepping: quota.Intervals of random change lists (in
// any order, deletions of keys never set included) sums per key and team
// to the integral computed second by second from the changes, each
// second under the last change of its key at or before it (the later
// written one when two share a second); intervals of one key never
// overlap and lie inside the period; State is what is in force at the
// last change.
func TestIntervalsMatchStepping(t *testing.T) {
	keys := []quota.Key{
		{Source: quota.SourceKueue, Object: "a", Resource: "gpu"},
		{Source: quota.SourceKueue, Object: "a", Resource: "mig-3g.40gb"},
		{Source: quota.SourceVolcano, Object: "b", Resource: "mig-1c.3g.40gb"},
		{Source: quota.SourceKAI, Object: "c", Resource: "H100-80GB-HBM3"},
	}
	base := start.Unix()
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0x1a7e))
		var changes []quota.Change
		for range rng.IntN(30) {
			k := keys[rng.IntN(len(keys))]
			c := quota.Change{At: time.Unix(base+rng.Int64N(500), 0).UTC(),
				Entry: quota.Entry{Key: k, Team: []string{"ml", "vision"}[rng.IntN(2)], Milli: rng.Int64N(20) * 250}}
			if rng.IntN(4) == 0 {
				c.Deleted, c.Milli = true, 0
			}
			changes = append(changes, c)
		}
		from := base - 20 + rng.Int64N(540)
		to := from + rng.Int64N(base+540-from)
		// in force at second x: the last change of the key at or before
		// x, the later of two in one second.
		inForce := func(k quota.Key, x int64) (quota.Change, bool) {
			var best quota.Change
			found := false
			for _, c := range changes {
				if c.Key == k && c.At.Unix() <= x && (!found || c.At.Unix() >= best.At.Unix()) {
					best, found = c, true
				}
			}
			return best, found && !best.Deleted
		}
		want := map[teamKey]int64{}
		for x := from; x < to; x++ {
			for _, k := range keys {
				if c, ok := inForce(k, x); ok {
					want[teamKey{k, c.Team}] += c.Milli * sevenths[k.Resource]
				}
			}
		}
		f, tt := time.Unix(from, 0).UTC(), time.Unix(to, 0).UTC()
		ivs := quota.Intervals(changes, f, tt)
		got := map[teamKey]*big.Rat{}
		lastTo := map[quota.Key]time.Time{}
		for _, iv := range ivs {
			if iv.From.Before(f) || iv.To.After(tt) || !iv.From.Before(iv.To) {
				t.Fatalf("seed %d: interval %+v outside [%s, %s) or empty", seed, iv, f, tt)
			}
			if l, ok := lastTo[iv.Key]; ok && iv.From.Before(l) {
				t.Fatalf("seed %d: intervals of %+v overlap at %s", seed, iv.Key, iv.From)
			}
			lastTo[iv.Key] = iv.To
			gs, err := iv.GPUSeconds()
			if err != nil {
				t.Fatal(err)
			}
			k := teamKey{iv.Key, iv.Team}
			if got[k] == nil {
				got[k] = new(big.Rat)
			}
			got[k].Add(got[k], gs)
		}
		for k, v := range want {
			if g := got[k]; (g == nil && v != 0) || (g != nil && g.Cmp(big.NewRat(v, 7000)) != 0) {
				t.Errorf("seed %d [%d, %d) %+v: Intervals give %v GPU-seconds, stepping %v", seed, from, to, k, g, big.NewRat(v, 7000).RatString())
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok && g.Sign() != 0 {
				t.Errorf("seed %d %+v: Intervals give %v GPU-seconds, stepping none", seed, k, g)
			}
		}
		end := base + 600
		st := quota.State(changes)
		for _, k := range keys {
			c, ok := inForce(k, end)
			e, got := st[k]
			if ok != got || (ok && e != c.Entry) {
				t.Errorf("seed %d: State[%+v] = %+v (%v), want %+v (%v)", seed, k, e, got, c.Entry, ok)
			}
		}
	}
}
