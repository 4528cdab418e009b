package report

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// maxFindingGroups bounds the findings a report keeps: a dense node flags
// tens of thousands of episodes a day, but only a few thousand containers.
const maxFindingGroups = 5000

// FindingSummary is one container's detector episodes of one kind over the
// period.
type FindingSummary struct {
	Kind                      string // attribution.FindingIdleAllocation, ...NoisyNeighbour, ...Starved, ...MemoryGrowth
	Namespace, Pod, Container string
	Team, Node                string
	GPUs                      []string
	Episodes                  int
	Duration                  time.Duration // inside the period
	First, Last               time.Time     // first start, last end
	// Related names pods: for a noisy neighbour the pods it starved, for a
	// starved container the noisy pods ("namespace/pod").
	Related []string
	// Detail is the latest episode's detail: for memory_growth its rate,
	// projected exhaustion and who is at risk.
	Detail string
}

// PodName is "namespace/pod".
func (f FindingSummary) PodName() string { return f.Namespace + "/" + f.Pod }

type findingKey struct{ kind, namespace, pod, container string }

// collectFindings groups the period's findings per container and kind, and
// links noisy neighbours to the pods they starved.
// dropped counts the episodes of containers past maxFindingGroups; leaves
// are the nodes' clean leaves in the period (buildCoverage's), read in the
// same pass.
func collectFindings(ctx context.Context, src Source, from, to time.Time) (out []FindingSummary, dropped int, leaves map[string][]time.Time, err error) {
	leaves = map[string][]time.Time{}
	groups := map[findingKey]*FindingSummary{}
	gpus := map[findingKey]map[string]bool{}
	related := map[findingKey]map[string]bool{}
	err = src.Findings(ctx, from, to, func(f attribution.Finding) error {
		if f.Kind == ledger.FindingNodeLeft {
			// A clean leave, not an episode: it closes a gap (gaps.go).
			n := ledger.NodeKey(f.Cluster, f.Node)
			leaves[n] = append(leaves[n], f.Start)
			return nil
		}
		k := findingKey{f.Kind, f.Namespace, f.Pod, f.Container}
		g := groups[k]
		if g == nil {
			if len(groups) >= maxFindingGroups {
				dropped++
				return nil
			}
			g = &FindingSummary{Kind: f.Kind, Namespace: f.Namespace, Pod: f.Pod, Container: f.Container,
				Team: f.Team, Node: f.Node, First: f.Start, Last: f.End}
			groups[k] = g
			gpus[k], related[k] = map[string]bool{}, map[string]bool{}
		}
		g.Episodes++
		g.Duration += clipped(f.Start, f.End, from, to)
		if f.Start.Before(g.First) {
			g.First = f.Start
		}
		if !f.End.Before(g.Last) {
			g.Last, g.Detail = f.End, f.Detail
		}
		if f.GPUUUID != "" {
			gpus[k][f.GPUUUID] = true
		}
		if f.Kind == attribution.FindingStarved && f.NoisyPod != "" {
			related[k][f.NoisyPod] = true
		}
		return nil
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("cannot read findings: %w", err)
	}
	// A noisy pod's victims are the starved containers that name it.
	noisy := map[string][]findingKey{}
	for k := range groups {
		if k.kind == attribution.FindingNoisyNeighbour {
			noisy[k.namespace+"/"+k.pod] = append(noisy[k.namespace+"/"+k.pod], k)
		}
	}
	for k, g := range groups {
		if k.kind != attribution.FindingStarved {
			continue
		}
		for pod := range related[k] {
			for _, nk := range noisy[pod] {
				related[nk][g.PodName()] = true
			}
		}
	}
	out = make([]FindingSummary, 0, len(groups))
	for k, g := range groups {
		g.GPUs = sortedKeys(gpus[k])
		g.Related = sortedKeys(related[k])
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b FindingSummary) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), cmp.Compare(b.Duration, a.Duration),
			strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod), strings.Compare(a.Container, b.Container))
	})
	return out, dropped, leaves, nil
}

// clipped is the part of [s, e) inside [from, to).
func clipped(s, e, from, to time.Time) time.Duration {
	if s.Before(from) {
		s = from
	}
	if e.After(to) {
		e = to
	}
	if !e.After(s) {
		return 0
	}
	return e.Sub(s)
}
