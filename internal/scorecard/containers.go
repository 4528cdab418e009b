package scorecard

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// totals is one container's sums and the values it was seen with.
type totals struct {
	used, allocated       float64
	modes, teams, methods map[string]bool
}

// containerTotals adds up the container rows by namespace/pod/container.
func containerTotals(rows []Row) map[string]*totals {
	agg := map[string]*totals{}
	for _, r := range rows {
		if r.Kind != "container" {
			continue
		}
		key := r.Namespace + "/" + r.Pod + "/" + r.Container
		a := agg[key]
		if a == nil {
			a = &totals{modes: map[string]bool{}, teams: map[string]bool{}, methods: map[string]bool{}}
			agg[key] = a
		}
		a.used += r.Used
		a.allocated += r.Allocated
		a.modes[r.SharingMode] = true
		a.teams[r.Team] = true
		a.methods[r.Method] = true
	}
	return agg
}

// checkContainers compares each truth container with its totals: used
// within the mode's tolerance (or, for estimated truth, method=estimated on
// some row), allocated within 1e-6 relative plus 1 ms plus edge_tol, one
// sharing mode and one team, both the truth's. It also returns the worst
// relative used error above the absolute floor.
func checkContainers(t *Truth, agg map[string]*totals) ([]string, float64) {
	var errs []string
	worst := 0.0
	for _, key := range slices.Sorted(maps.Keys(t.Containers)) {
		c := t.Containers[key]
		a := agg[key]
		if a == nil {
			errs = append(errs, key+": no ledger rows")
			continue
		}
		if c.Method != "estimated" {
			msg, rel := checkUsed(c, a.used)
			if msg != "" {
				errs = append(errs, key+": "+msg)
			}
			worst = math.Max(worst, rel)
		} else if !a.methods["estimated"] {
			errs = append(errs, fmt.Sprintf("%s: expected method=estimated, got %v", key, setList(a.methods)))
		}
		if math.Abs(a.allocated-c.Allocated) > 1e-6*c.Allocated+1e-3+c.EdgeTol {
			errs = append(errs, fmt.Sprintf("%s: allocated %.3f vs truth %.3f", key, a.allocated, c.Allocated))
		}
		if len(a.modes) != 1 || !a.modes[c.SharingMode] {
			errs = append(errs, fmt.Sprintf("%s: sharing_mode %v vs %s", key, setList(a.modes), c.SharingMode))
		}
		if len(a.teams) != 1 || !a.teams[c.Team] {
			errs = append(errs, fmt.Sprintf("%s: team %v vs %s", key, setList(a.teams), c.Team))
		}
	}
	return errs, worst
}

// checkUsed scores a measured container's used seconds against its truth,
// or against what whole-percent samples can show where the truth gives
// that. rel counts toward the worst error only above the absolute floor.
func checkUsed(c ContainerTruth, got float64) (msg string, rel float64) {
	tol := tolUsedDefault
	if c.SharingMode == "mps" {
		tol = tolUsedMPS
	}
	target := c.Used
	if c.UsedObservable != nil {
		target = *c.UsedObservable
	}
	err := math.Abs(got - target)
	rel = err / math.Max(c.Used, 1e-9)
	if err > math.Max(tol*c.Used, absUsed) {
		msg = fmt.Sprintf("used %.2f vs truth %.2f (%s)", got, c.Used, percent(rel))
	}
	if c.Used <= 0 || err <= absUsed {
		rel = 0
	}
	return msg, rel
}

// checkGroups: the members of an instance group used, together, what the
// group used, to 1% (or the absolute floor).
func checkGroups(t *Truth, agg map[string]*totals) []string {
	var errs []string
	for _, g := range t.InstanceGroups {
		sum := 0.0
		for _, m := range g.Members {
			if a := agg[m]; a != nil {
				sum += a.used
			}
		}
		if math.Abs(sum-g.Used) > math.Max(0.01*g.Used, absUsed) {
			errs = append(errs, fmt.Sprintf("instance group %v: used %.2f vs %.2f", g.Members, sum, g.Used))
		}
	}
	return errs
}

// checkResiduals: each GPU's unallocated and unattributed seconds, where
// the truth states them, to 1% (or the absolute floor).
func checkResiduals(t *Truth, rows []Row) []string {
	residual := map[string]map[string]float64{}
	for _, r := range rows {
		if r.Kind == "container" {
			continue
		}
		if residual[r.GPU] == nil {
			residual[r.GPU] = map[string]float64{}
		}
		residual[r.GPU][r.Kind] += r.Allocated + r.Used
	}
	var errs []string
	for _, g := range slices.Sorted(maps.Keys(t.GPUs)) {
		want := t.GPUs[g]
		for _, kr := range []struct {
			kind string
			want *float64
		}{{"unallocated", want.Unallocated}, {"unattributed", want.Unattributed}} {
			if kr.want == nil {
				continue
			}
			got := residual[g][kr.kind]
			if math.Abs(got-*kr.want) > math.Max(0.01**kr.want, absUsed) {
				errs = append(errs, fmt.Sprintf("gpu %s %s %.2f vs %.2f", short(g), kr.kind, got, *kr.want))
			}
		}
	}
	return errs
}

// setList is a set's members in order, for messages.
func setList(s map[string]bool) []string { return slices.Sorted(maps.Keys(s)) }
