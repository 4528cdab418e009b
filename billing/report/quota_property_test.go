package report

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/quota"
)

// TestRandomQuotaReconciles: policy quota on random fleets and random
// quota timelines (set before the period, changed and deleted inside it,
// on whole GPUs and MIG profiles), through the embedded store. The file
// adds up to capacity x rate rounded once; every quota and above-quota
// line is its hours x its rate, rounded once; and each team's quota-hours
// and above-quota hours equal a second-by-second walk of its timeline
// against its rows summed per local calendar hour, done here by hand.
func TestRandomQuotaReconciles(t *testing.T) {
	iterations := 8
	if testing.Short() {
		iterations = 4
	}
	rng := rand.New(rand.NewSource(2611))
	zones := []string{"UTC", "Asia/Kolkata", "America/New_York", "Asia/Kathmandu"}
	for it := 0; it < iterations; it++ {
		step := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}[rng.Intn(3)]
		base := time.Date(2026, 11, 1+rng.Intn(5), 0, 0, 0, 0, time.UTC)
		span := time.Duration(1+rng.Intn(2)) * 24 * time.Hour
		gpus, tenants := randomFleet(rng, base, base.Add(span), step)
		rows := ledgerRows(gpus, tenants, step)
		from := base.Add(time.Duration(rng.Intn(3600*6)) * time.Second)
		to := from.Add(time.Duration(3600+rng.Intn(int(span/time.Second)-3600)) * time.Second)
		switch rng.Intn(3) {
		case 0: // a running month: the period runs past the data, into hours still to come
			to = base.Add(span + time.Duration(1+rng.Intn(2*86400))*time.Second)
		case 1: // the ledger began after the period did
			from = base.Add(-time.Duration(1+rng.Intn(86400)) * time.Second)
		}
		zone := zones[it%len(zones)]
		y := fmt.Sprintf("currency: USD\ntimezone: %s\npolicy: quota\ndefaultRate: %s\nrates: {}\nquota: {source: kueue, rate: %s, aboveRate: %s}\n",
			zone, randomRate(rng), randomRate(rng), randomRate(rng))
		b := book(t, y)
		teams := map[string]bool{}
		for _, tn := range tenants {
			teams[tn.team] = true
		}
		var changes []quota.Change
		for team := range teams {
			if rng.Intn(4) == 0 {
				continue // no quota: all it holds is above
			}
			for _, res := range []string{"gpu", "mig-1g.10gb", "mig-3g.40gb"}[:1+rng.Intn(3)] {
				k := quota.Key{Source: []string{quota.SourceKueue, quota.SourceVolcano}[rng.Intn(2)], Object: "q-" + team, Resource: res}
				at := from.Add(-time.Duration(rng.Intn(86400)) * time.Second)
				for n := rng.Intn(6); n >= 0; n-- {
					c := quota.Change{At: at, Entry: quota.Entry{Key: k, Team: team, Milli: int64(rng.Intn(5)) * 500}}
					if rng.Intn(5) == 0 {
						c.Deleted, c.Milli = true, 0
					}
					changes = append(changes, c)
					at = at.Add(time.Duration(1+rng.Intn(int(span/time.Second)/3)) * time.Second)
				}
			}
		}
		r := mustBuild(t, quotaLedger(t, rows, changes), b, from, to)

		wantTotal, _ := expectedTotal(t, b, capacitySeconds(gpus, step, from, to))
		var sum int64
		for _, l := range r.Lines {
			sum += l.Amount
			if l.Type == LineQuota || l.Type == LineAboveQuota {
				if got := new(big.Rat).Mul(l.Charged, l.Rate.Rat()); got.Cmp(l.Exact) != 0 {
					t.Errorf("%s line of %s: %s h x %s != %s", l.Type, l.Team, l.Charged.FloatString(6), l.Rate, l.Exact.FloatString(9))
				}
				cents, _ := new(big.Rat).Mul(l.Exact, big.NewRat(100, 1)).Float64()
				if math.Abs(float64(l.Amount)-cents) >= 1 {
					t.Errorf("%s line of %s: amount %d cents, exact %f", l.Type, l.Team, l.Amount, cents)
				}
			}
		}
		if sum != wantTotal || r.Total != wantTotal {
			t.Errorf("lines add up to %d, total %d, capacity x rate rounded once %d", sum, r.Total, wantTotal)
		}
		wantQuota, wantAbove := handQuota(changes, rows, b.Location, from, to)
		gotQuota, gotAbove := map[string]float64{}, map[string]float64{}
		for _, l := range r.Lines {
			switch l.Type {
			case LineQuota:
				f, _ := l.AllocatedHours.Float64()
				gotQuota[l.Team] += f
			case LineAboveQuota:
				f, _ := l.AllocatedHours.Float64()
				gotAbove[l.Team] += f
			}
		}
		for team := range teams {
			if math.Abs(gotQuota[team]-wantQuota[team]) > 1e-9 || math.Abs(gotAbove[team]-wantAbove[team]) > 1e-6 {
				t.Errorf("team %s: quota %.9f h above %.9f h; by hand %.9f h and %.9f h", team, gotQuota[team], gotAbove[team], wantQuota[team], wantAbove[team])
			}
		}
		if t.Failed() {
			t.Fatalf("iteration %d: zone %s, step %s, period [%s, %s), %d changes", it, zone, step, from.Format(time.RFC3339), to.Format(time.RFC3339), len(changes))
		}
	}
}

// handQuota walks the part of [from, to) that the ledger's rows cover
// second by second: from the start of the period's first row (by start) to
// the end of its last, clipped to the period, since quota is never counted
// for hours the ledger knows nothing of (hours still to come, or before the
// ledger began). Each key's quota is its last change at or before the
// second (in the order given when two share one), kueue only; held is the
// rows' allocated seconds per local calendar hour ("2006-01-02T15" in loc)
// of their start.
func handQuota(changes []quota.Change, rows []attribution.Row, loc *time.Location, from, to time.Time) (q, above map[string]float64) {
	q, above = map[string]float64{}, map[string]float64{}
	held := map[string]map[string]float64{}
	var dataStart, dataEnd time.Time
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		if dataStart.IsZero() || r.IntervalStart.Before(dataStart) {
			dataStart = r.IntervalStart
		}
		if r.IntervalEnd.After(dataEnd) {
			dataEnd = r.IntervalEnd
		}
		if r.Kind != attribution.KindContainer {
			continue
		}
		h := r.IntervalStart.In(loc).Format("2006-01-02T15")
		if held[r.Team] == nil {
			held[r.Team] = map[string]float64{}
		}
		held[r.Team][h] += r.AllocatedGPUSeconds
	}
	if dataEnd.After(to) {
		dataEnd = to
	}
	perHour := map[string]map[string]float64{}
	for s := dataStart; s.Before(dataEnd); s = s.Add(time.Second) {
		cur := map[quota.Key]quota.Change{}
		for _, c := range changes {
			if !c.At.After(s) && (cur[c.Key].At.IsZero() || !c.At.Before(cur[c.Key].At)) {
				cur[c.Key] = c
			}
		}
		h := s.In(loc).Format("2006-01-02T15")
		for _, c := range cur {
			if c.Deleted || c.Source != quota.SourceKueue {
				continue
			}
			w := 1.0
			if p := quota.Profile(c.Resource); p != "" {
				w = map[string]float64{"1g.10gb": 1.0 / 7, "3g.40gb": 3.0 / 7}[p]
			}
			g := float64(c.Milli) / 1000 * w
			q[c.Team] += g / 3600
			if perHour[c.Team] == nil {
				perHour[c.Team] = map[string]float64{}
			}
			perHour[c.Team][h] += g
		}
	}
	for team, hs := range held {
		for h, secs := range hs {
			if d := secs - perHour[team][h]; d > 0 {
				above[team] += d / 3600
			}
		}
	}
	return q, above
}
