package report

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// maxGapsListed bounds the gaps a report lists; the rest are counted in
// the totals (Coverage.Omitted*), so a crash-looping collector's thousands
// of holes neither bloat a page nor go unsaid.
const maxGapsListed = 200

// Gap is a stretch of a period in which GPUs the ledger saw in it have no
// rows and their node did not leave cleanly: from a GPU's last row to the
// data's end, or between two of its rows. Nothing is billed for it. GPUs of
// one node with the same stretch are one gap.
type Gap struct {
	Node     string
	GPUs     int
	From, To time.Time // in the book's zone
	// Trailing is set when the GPUs sent nothing more up to the data's
	// end: the node stopped sending.
	Trailing bool
}

// GPUHours is the gap's GPUs times its length, exactly.
func (g Gap) GPUHours() *big.Rat {
	return new(big.Rat).Mul(big.NewRat(int64(g.GPUs), 1), big.NewRat(g.To.Sub(g.From).Nanoseconds(), int64(time.Hour)))
}

// Coverage is what a report says of the time it has no data for.
type Coverage struct {
	// Gaps are the listed gaps, in time order, then by node; at most
	// maxGapsListed.
	Gaps []Gap
	// Count and GPUHours are every gap's, listed or not.
	Count    int
	GPUHours *big.Rat
	// Omitted is how many gaps were not listed; Truncated is set when the
	// ledger had more holes than it returns (ledger.MaxCoverageHoles), so
	// Count and GPUHours are lower bounds.
	Omitted   int
	Truncated bool
	// ByNode is each node's gap GPU-hours, every gap counted; Silent is,
	// for each node whose GPUs stopped sending before DataEnd (the end of
	// the period's data), when the earliest of them stopped.
	ByNode  map[string]*big.Rat
	Silent  map[string]time.Time
	DataEnd time.Time
}

// Empty reports whether the period has no gap.
func (c *Coverage) Empty() bool { return c == nil || c.Count == 0 }

// buildCoverage finds the period's gaps where the source can list its
// holes (both ledgers can; a source must say it can, ledger.Covered). dataEnd is the
// end of the period's data: a GPU whose rows stop before it has a gap to
// it, unless its node left cleanly (a ledger.FindingNodeLeft finding at
// the end of its last row: leaves, per node, from collectFindings).
func buildCoverage(ctx context.Context, src Source, from, to, dataEnd time.Time, loc *time.Location, leaves map[string][]time.Time) (*Coverage, error) {
	if dataEnd.IsZero() {
		return nil, nil
	}
	cr, err := ledger.Covered(src)
	if err != nil {
		return nil, fmt.Errorf("cannot find the period's coverage gaps: %w", err)
	}
	cov, err := cr.Coverage(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("cannot find the period's coverage gaps: %w", err)
	}
	// A leave at L excuses the hole it opened: the one from the node's
	// last row at or before L to the next row.
	left := func(node string, h ledger.Hole) bool {
		for _, l := range leaves[node] {
			if !l.Before(h.From) && l.Before(h.To) {
				return true
			}
		}
		return false
	}
	type key struct {
		node     string
		from, to int64
	}
	gpus := map[key]int{}
	add := func(node string, h ledger.Hole) {
		h.From, h.To = maxTime(h.From, from), minTime(h.To, minTime(to, dataEnd))
		if !h.From.Before(h.To) || left(node, h) {
			return
		}
		gpus[key{node, h.From.UnixNano(), h.To.UnixNano()}]++
	}
	// A node is (cluster, node): ledger.NodeKey names another cluster's
	// node as "cluster/node", so same-named nodes never share a gap.
	for _, d := range cov.Devices {
		node := ledger.NodeKey(d.Cluster, d.Node)
		for _, h := range d.Holes {
			add(node, h)
		}
		add(node, ledger.Hole{From: d.Last, To: dataEnd})
	}
	out := &Coverage{GPUHours: new(big.Rat), Truncated: cov.Truncated, ByNode: map[string]*big.Rat{},
		Silent: map[string]time.Time{}, DataEnd: dataEnd.In(loc)}
	for k, n := range gpus {
		g := Gap{Node: k.node, GPUs: n, From: time.Unix(0, k.from).In(loc), To: time.Unix(0, k.to).In(loc)}
		g.Trailing = g.To.Equal(dataEnd)
		out.Gaps = append(out.Gaps, g)
		h := g.GPUHours()
		out.GPUHours.Add(out.GPUHours, h)
		if out.ByNode[g.Node] == nil {
			out.ByNode[g.Node] = new(big.Rat)
		}
		out.ByNode[g.Node].Add(out.ByNode[g.Node], h)
		if s, ok := out.Silent[g.Node]; g.Trailing && (!ok || g.From.Before(s)) {
			out.Silent[g.Node] = g.From
		}
	}
	slices.SortFunc(out.Gaps, func(a, b Gap) int {
		return cmp.Or(a.From.Compare(b.From), a.To.Compare(b.To), strings.Compare(a.Node, b.Node))
	})
	out.Count = len(out.Gaps)
	if len(out.Gaps) > maxGapsListed {
		out.Omitted = len(out.Gaps) - maxGapsListed
		out.Gaps = out.Gaps[:maxGapsListed]
	}
	return out, nil
}

// GapNote says in one line what the ledger is missing: the nodes that
// stopped sending, by the day they stopped, and the gaps between rows;
// "" when there is no gap. Gaps are never billed.
func (r *Report) GapNote() string {
	c := r.Coverage
	if c.Empty() {
		return ""
	}
	stopped := map[string][]string{} // day -> nodes
	var days []string
	inner := 0
	for _, g := range c.Gaps {
		if !g.Trailing {
			inner++
			continue
		}
		d := g.From.Format(time.DateOnly)
		if len(stopped[d]) == 0 {
			days = append(days, d)
		}
		if !slices.Contains(stopped[d], g.Node) {
			stopped[d] = append(stopped[d], g.Node)
		}
	}
	var parts []string
	for _, d := range days {
		ns := stopped[d]
		slices.Sort(ns)
		parts = append(parts, fmt.Sprintf("%s stopped sending on %s (%s)", plural(len(ns), "node"), d, strings.Join(ns, ", ")))
	}
	if inner > 0 {
		parts = append(parts, plural(inner, "gap")+" between rows")
	}
	if c.Omitted > 0 {
		parts = append(parts, fmt.Sprintf("%d more not listed", c.Omitted))
	}
	at := ""
	if c.Truncated {
		at = "at least "
	}
	return fmt.Sprintf("coverage: %s%s without data (%s GPU-hours), not billed: %s",
		at, plural(c.Count, "gap"), decimal(c.GPUHours, 2), strings.Join(parts, "; "))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
