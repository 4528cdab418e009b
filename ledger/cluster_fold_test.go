package ledger

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// FoldClusters sums each group's clusters into its first aggregate's
// place, whether the aggregates come from one cluster or several, and
// keeps one cluster's when a filter names it.
func TestFoldClustersSumsEachGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for trial := 0; trial < 200; trial++ {
		clusters := []string{"default", "east", "west"}[:1+rng.IntN(3)]
		seen := map[string]bool{}
		var as []Aggregate
		for n := rng.IntN(18 * len(clusters)); len(as) < n; { // 18 keys a cluster
			a := Aggregate{BucketStart: day.AddDate(0, 0, rng.IntN(2)), Team: fmt.Sprint("t", rng.IntN(3)), Pod: fmt.Sprint("p", rng.IntN(3)),
				Cluster: clusters[rng.IntN(len(clusters))]}
			if k := fmt.Sprint(a.BucketStart, a.Team, a.Pod, a.Cluster); !seen[k] {
				seen[k] = true
				a.AllocatedSeconds, a.Rows = float64(rng.IntN(1000)), int64(1+rng.IntN(5))
				as = append(as, a)
			}
		}
		// By hand: each (bucket, team, pod) once, where it first came, its
		// clusters' seconds and rows added.
		type sum struct {
			alloc float64
			rows  int64
		}
		want := map[string]*sum{}
		var order []string
		for _, a := range as {
			k := fmt.Sprint(a.BucketStart, a.Team, a.Pod)
			if want[k] == nil {
				want[k] = &sum{}
				order = append(order, k)
			}
			want[k].alloc += a.AllocatedSeconds
			want[k].rows += a.Rows
		}
		filtered := 0
		for _, a := range as {
			if a.Cluster == clusters[0] {
				filtered++
			}
		}
		got := FoldClusters(append([]Aggregate(nil), as...), AggregateQuery{})
		if len(got) != len(order) {
			t.Fatalf("trial %d (%d clusters): %d groups, want %d", trial, len(clusters), len(got), len(order))
		}
		for i, g := range got {
			w := want[order[i]]
			if k := fmt.Sprint(g.BucketStart, g.Team, g.Pod); k != order[i] || g.AllocatedSeconds != w.alloc || g.Rows != w.rows || g.Cluster != "" {
				t.Fatalf("trial %d (%d clusters): group %d is %s %v %d %q, want %s %v %d", trial, len(clusters), i, k, g.AllocatedSeconds, g.Rows, g.Cluster, order[i], w.alloc, w.rows)
			}
		}
		if kept := FoldClusters(append([]Aggregate(nil), as...), AggregateQuery{Cluster: clusters[0]}); len(kept) != filtered {
			t.Fatalf("trial %d: cluster %s keeps %d aggregates, want %d", trial, clusters[0], len(kept), filtered)
		}
	}
}
