package ledger

import (
	"cmp"
	"slices"
	"strings"
)

// SortDeviceAggregates orders ByDevice aggregates by bucket, team,
// namespace, model, mode, kind, GPU, slice and pod: both stores return
// them in this order.
func SortDeviceAggregates(as []Aggregate) {
	slices.SortFunc(as, func(x, y Aggregate) int {
		if c := x.BucketStart.Compare(y.BucketStart); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(x.Team, y.Team), strings.Compare(x.Namespace, y.Namespace),
			strings.Compare(x.GPUModel, y.GPUModel), strings.Compare(x.Mode, y.Mode), strings.Compare(string(x.Kind), string(y.Kind)),
			strings.Compare(x.GPUUUID, y.GPUUUID), strings.Compare(x.SliceID, y.SliceID), strings.Compare(x.Pod, y.Pod),
			strings.Compare(x.Cluster, y.Cluster))
	})
}
