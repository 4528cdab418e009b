package ledger

import (
	"slices"
	"strings"
)

// SortDeviceAggregates orders ByDevice aggregates by bucket, team,
// namespace, model, mode, kind, GPU, slice and pod: both stores return
// them in this order. The indexes are sorted and each aggregate then
// moved once: an Aggregate is large, and a month by pod sorts 36,000.
func SortDeviceAggregates(as []Aggregate) {
	idx := make([]int, len(as))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return compareDevice(&as[i], &as[j]) })
	// Place k takes the aggregate now at idx[k]; a place done is marked
	// idx[k] == k.
	for k := range idx {
		if idx[k] == k {
			continue
		}
		tmp := as[k]
		j := k
		for {
			next := idx[j]
			idx[j] = j
			if next == k {
				as[j] = tmp
				break
			}
			as[j] = as[next]
			j = next
		}
	}
}

// compareDevice compares each field only when the ones before tie.
func compareDevice(x, y *Aggregate) int {
	if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
		return c
	}
	for _, f := range [...][2]string{{x.Team, y.Team}, {x.Namespace, y.Namespace}, {x.GPUModel, y.GPUModel}, {x.Mode, y.Mode},
		{string(x.Kind), string(y.Kind)}, {x.GPUUUID, y.GPUUUID}, {x.SliceID, y.SliceID}, {x.Pod, y.Pod}} {
		if c := strings.Compare(f[0], f[1]); c != 0 {
			return c
		}
	}
	return strings.Compare(x.Cluster, y.Cluster)
}
