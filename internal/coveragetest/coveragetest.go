// Package coveragetest is the tests' ground truth of a ledger's coverage:
// second-by-second walks over rows, independent of the stores' searches
// and the report's gaps (tests only).
package coveragetest

import (
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// WalkHoles is the ground truth of Coverage: a second-by-second walk over
// the rows of [from, to), keyed by ledger.NodeKey(cluster, node) + "/" +
// GPU. For every (cluster, node, GPU), a second is covered when a
// row's interval contains it; the GPU's holes are the runs of uncovered
// seconds between its first covered second and its last; its bounds are
// its rows' earliest start and latest end.
func WalkHoles(rows []attribution.Row, from, to time.Time) map[string]ledger.DeviceCoverage {
	covered := map[string]map[int64]bool{}
	out := map[string]ledger.DeviceCoverage{}
	for _, r := range rows {
		if r.IntervalStart.Before(from) || !r.IntervalStart.Before(to) {
			continue
		}
		k := ledger.NodeKey(r.Cluster, r.Node) + "/" + r.GPUUUID
		if covered[k] == nil {
			covered[k] = map[int64]bool{}
			out[k] = ledger.DeviceCoverage{Cluster: ledger.ClusterOrDefault(r.Cluster), Node: r.Node, GPUUUID: r.GPUUUID, First: r.IntervalStart, Last: r.IntervalEnd}
		}
		d := out[k]
		if r.IntervalStart.Before(d.First) {
			d.First = r.IntervalStart
		}
		if r.IntervalEnd.After(d.Last) {
			d.Last = r.IntervalEnd
		}
		out[k] = d
		for t := r.IntervalStart.Unix(); t < r.IntervalEnd.Unix(); t++ {
			covered[k][t] = true
		}
	}
	for k, c := range covered {
		lo, hi := int64(1<<62), int64(-1)
		for t := range c {
			lo, hi = min(lo, t), max(hi, t)
		}
		holes := []ledger.Hole{}
		for t := lo; t <= hi; t++ {
			if c[t] {
				continue
			}
			if n := len(holes); n > 0 && holes[n-1].To.Unix() == t {
				holes[n-1].To = time.Unix(t+1, 0).UTC()
			} else {
				holes = append(holes, ledger.Hole{From: time.Unix(t, 0).UTC(), To: time.Unix(t+1, 0).UTC()})
			}
		}
		d := out[k]
		d.Holes = holes
		out[k] = d
	}
	return out
}

// WalkGapSeconds is the ground truth: a second-by-second walk over every
// GPU's rows from its first row to the data's end (the latest row end). A
// second no row of the GPU covers is a gap second unless the node left
// cleanly since the GPU's last covered second. Keyed by
// ledger.NodeKey(cluster, node).
func WalkGapSeconds(rows []attribution.Row, findings []attribution.Finding) map[string]int64 {
	type dev struct{ node, gpu string }
	covered := map[dev]map[int64]bool{}
	first := map[dev]int64{}
	var end int64
	for _, r := range rows {
		d := dev{ledger.NodeKey(r.Cluster, r.Node), r.GPUUUID}
		if covered[d] == nil {
			covered[d], first[d] = map[int64]bool{}, r.IntervalStart.Unix()
		}
		first[d] = min(first[d], r.IntervalStart.Unix())
		for t := r.IntervalStart.Unix(); t < r.IntervalEnd.Unix(); t++ {
			covered[d][t] = true
		}
		end = max(end, r.IntervalEnd.Unix())
	}
	leftAt := map[string]map[int64]bool{}
	for _, f := range findings {
		if f.Kind == ledger.FindingNodeLeft {
			n := ledger.NodeKey(f.Cluster, f.Node)
			if leftAt[n] == nil {
				leftAt[n] = map[int64]bool{}
			}
			leftAt[n][f.Start.Unix()] = true
		}
	}
	out := map[string]int64{}
	for d, c := range covered {
		left := false
		for t := first[d]; t < end; t++ {
			if c[t] {
				left = false
				continue
			}
			if leftAt[d.node][t] {
				left = true
			}
			if !left {
				out[d.node]++
			}
		}
	}
	return out
}
