package ledger

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// SortDeviceAggregates puts random aggregates (keys that share some
// fields, none equal) in the order of the fields as listed, each
// aggregate moved whole.
func TestSortDeviceAggregatesOrdersWholeAggregates(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	pick := func(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, rng.IntN(n)) }
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for trial := 0; trial < 50; trial++ {
		seen := map[string]bool{}
		var as []Aggregate
		for n := rng.IntN(400); len(as) < n; {
			a := Aggregate{BucketStart: day.AddDate(0, 0, rng.IntN(3)), Team: pick("t", 3), Namespace: pick("ns", 3), GPUModel: pick("m", 2),
				Mode: pick("s", 2), Kind: []attribution.Kind{attribution.KindContainer, attribution.KindIdle}[rng.IntN(2)],
				GPUUUID: pick("GPU-", 3), SliceID: pick("sl", 2), Pod: pick("p", 3), Cluster: pick("c", 2)}
			k := fmt.Sprint(a.BucketStart, a.Team, a.Namespace, a.GPUModel, a.Mode, a.Kind, a.GPUUUID, a.SliceID, a.Pod, a.Cluster)
			if seen[k] {
				continue // a store's aggregates never tie
			}
			seen[k] = true
			a.Rows = int64(len(as)) // the aggregate's identity, to see it moved whole
			a.AllocatedSeconds = float64(a.Rows) / 7
			as = append(as, a)
		}
		want := slices.Clone(as)
		slices.SortFunc(want, func(x, y Aggregate) int {
			return cmp.Or(x.BucketStart.Compare(y.BucketStart), strings.Compare(x.Team, y.Team), strings.Compare(x.Namespace, y.Namespace),
				strings.Compare(x.GPUModel, y.GPUModel), strings.Compare(x.Mode, y.Mode), strings.Compare(string(x.Kind), string(y.Kind)),
				strings.Compare(x.GPUUUID, y.GPUUUID), strings.Compare(x.SliceID, y.SliceID), strings.Compare(x.Pod, y.Pod),
				strings.Compare(x.Cluster, y.Cluster))
		})
		SortDeviceAggregates(as)
		for i := range as {
			if as[i].Rows != want[i].Rows || as[i].AllocatedSeconds != float64(as[i].Rows)/7 || as[i].Pod != want[i].Pod {
				t.Fatalf("trial %d: place %d holds aggregate %d, want %d", trial, i, as[i].Rows, want[i].Rows)
			}
		}
	}
}
