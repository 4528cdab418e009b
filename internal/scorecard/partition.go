package scorecard

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

type groupKey struct{ start, end, gpu string }

// checkPartitions checks both partitions per (interval, GPU): the
// allocated column and the used column each add up to the interval's
// length, to 1e-6 relative. It returns the seconds each GPU was covered.
func checkPartitions(rows []Row) (map[string]float64, []string) {
	type sums struct{ alloc, used float64 }
	groups := map[groupKey]*sums{}
	for _, r := range rows {
		k := groupKey{r.IntervalStart, r.IntervalEnd, r.GPU}
		s := groups[k]
		if s == nil {
			s = &sums{}
			groups[k] = s
		}
		s.alloc += r.Allocated
		s.used += r.Used
	}
	covered := map[string]float64{}
	var errs []string
	bad := 0
	for _, k := range sortedGroups(groups) {
		d, err := intervalLength(k)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		covered[k.gpu] += d
		s := groups[k]
		tol := 1e-6*math.Max(d, 1) + 1e-6
		if math.Abs(s.alloc-d) > tol || math.Abs(s.used-d) > tol {
			bad++
		}
	}
	if bad > 0 {
		errs = append(errs, fmt.Sprintf("partition broken in %d/%d (interval,gpu) groups", bad, len(groups)))
	}
	return covered, errs
}

func intervalLength(k groupKey) (float64, error) {
	a, err := time.Parse(time.RFC3339Nano, k.start)
	if err != nil {
		return 0, fmt.Errorf("gpu %s: interval_start %q is not an RFC 3339 time", short(k.gpu), k.start)
	}
	b, err := time.Parse(time.RFC3339Nano, k.end)
	if err != nil {
		return 0, fmt.Errorf("gpu %s: interval_end %q is not an RFC 3339 time", short(k.gpu), k.end)
	}
	return b.Sub(a).Seconds(), nil
}

// sortedGroups orders groups by GPU, then time, so messages are stable.
func sortedGroups[V any](m map[groupKey]V) []groupKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
}

// checkCoverage: every GPU of the truth is covered, by its intervals, for
// the scenario's whole duration (to a millisecond).
func checkCoverage(t *Truth, covered map[string]float64) []string {
	var errs []string
	for _, g := range slices.Sorted(maps.Keys(t.GPUs)) {
		if math.Abs(covered[g]-t.Duration) > 1e-3 {
			errs = append(errs, fmt.Sprintf("gpu %s covered %.1fs of %gs", short(g), covered[g], t.Duration))
		}
	}
	return errs
}
