package report

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// ClusterTotal is one cluster's part of a fleet bill: its own bill's
// total.
type ClusterTotal struct {
	Cluster string
	Total   int64 // minor units
}

// Clusters lists the clusters with ledger rows in [from, to), sorted.
func Clusters(ctx context.Context, src Source, loc *time.Location, from, to time.Time) ([]string, error) {
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: loc, Bucket: ledger.BucketNone, ByCluster: true})
	if err != nil {
		return nil, fmt.Errorf("cannot list the period's clusters: %w", err)
	}
	var out []string
	for _, a := range aggs {
		if !slices.Contains(out, a.Cluster) {
			out = append(out, a.Cluster)
		}
	}
	slices.Sort(out)
	return out, nil
}

// BuildFleet is BuildDated for one cluster's bill (cluster set: the
// ledger seen through ledger.OneCluster), or for the fleet's. A fleet
// whose period holds one cluster is billed as BuildDated bills it. With
// several, each cluster is billed on its own, as its own report would
// bill it (its idle capacity shared among its own teams, its amounts
// rounded on their own), and the fleet's bill is their sum: its lines are
// theirs, each naming its cluster, so the fleet's total is the sum of the
// clusters' to the cent; Clusters lists each one's total.
func BuildFleet(ctx context.Context, st ledger.Store, book *pricebook.Book, from, to, now time.Time, cluster string) (*Report, error) {
	if book == nil || book.Location == nil {
		return nil, fmt.Errorf("cannot build report: no price book")
	}
	if cluster != "" {
		v, err := ledger.OneCluster(st, cluster)
		if err != nil {
			return nil, fmt.Errorf("cannot build the report of one cluster: %w", err)
		}
		r, err := BuildDated(ctx, v, book, from, to, now)
		if err != nil {
			return nil, err
		}
		r.Cluster = cluster
		r.Clusters = []ClusterTotal{{Cluster: cluster, Total: r.Total}}
		return r, renameNotes(ctx, st, r)
	}
	names, err := Clusters(ctx, st, book.Location, from, to)
	if err != nil {
		return nil, err
	}
	if len(names) <= 1 {
		r, err := BuildDated(ctx, st, book, from, to, now)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			r.Clusters = []ClusterTotal{{Cluster: n, Total: r.Total}}
		}
		return r, renameNotes(ctx, st, r)
	}
	parts := make([]*Report, 0, len(names))
	for _, n := range names {
		v, err := ledger.OneCluster(st, n)
		if err != nil {
			return nil, fmt.Errorf("cannot bill cluster %q: %w", n, err)
		}
		p, err := BuildDated(ctx, v, book, from, to, now)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", n, err)
		}
		for i := range p.Lines {
			p.Lines[i].Cluster = n
		}
		p.Cluster = n // its FOCUS rows' devices are read for it alone (LoadDevices)
		parts = append(parts, p)
	}
	r, err := combineClusters(ctx, st, book, from, to, names, parts)
	if err != nil {
		return nil, err
	}
	return r, renameNotes(ctx, st, r)
}

// renameNotes sets r.ClusterNotes: for each cluster identity recorded
// under more than one name, one of which the report bills, the names in
// the order they were first seen. A renamed cluster's rows keep the name
// they were written under, so its bill is split between them. A store
// that records no identities has nothing to note.
func renameNotes(ctx context.Context, st ledger.Store, r *Report) error {
	ci, ok := st.(ledger.ClusterIdentities)
	if !ok {
		return nil
	}
	ids, err := ci.ClusterIdentities(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the ledger's cluster identities: %w", err)
	}
	billed := map[string]bool{}
	for _, c := range r.Clusters {
		billed[c.Cluster] = true
	}
	renamed := ledger.RenamedClusters(ids)
	var notes []string
	for _, id := range slices.Sorted(maps.Keys(renamed)) {
		cs := renamed[id]
		if !slices.ContainsFunc(cs, func(c ledger.ClusterIdentity) bool { return billed[c.Cluster] }) {
			continue
		}
		parts := make([]string, len(cs))
		for i, c := range cs {
			parts[i] = fmt.Sprintf("%s (from %s)", c.Cluster, c.FirstSeen.In(r.Book.Location).Format(time.RFC3339))
		}
		notes = append(notes, fmt.Sprintf("cluster %s was renamed: it shipped as %s; each name's rows stay under it, so its bill is split between them",
			id, strings.Join(parts, ", then ")))
	}
	r.ClusterNotes = notes
	return nil
}

// combineClusters is the fleet's bill from its clusters' (combine, which
// also joins the parts of a period priced by several books), with what
// combine takes from time-ordered parts set for side-by-side ones: the
// data bounds are the clusters' earliest and latest, and the coverage
// gaps are read for the whole fleet.
func combineClusters(ctx context.Context, st ledger.Store, book *pricebook.Book, from, to time.Time, names []string, parts []*Report) (*Report, error) {
	from, to = from.In(book.Location), to.In(book.Location)
	r, err := combine(ctx, st, from, to, parts)
	if err != nil {
		return nil, err
	}
	r.Book, r.PriceBooks = book, nil
	seen := map[*PricedBy]bool{}
	for _, p := range parts {
		for _, by := range p.PriceBooks {
			if !seen[by] && !slices.ContainsFunc(r.PriceBooks, func(o *PricedBy) bool { return o.SHA256 == by.SHA256 && o.From.Equal(by.From) }) {
				r.PriceBooks = append(r.PriceBooks, by)
			}
			seen[by] = true
		}
	}
	r.DataFrom, r.DataTo, r.DataStart, r.DataEnd = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	for i, p := range parts {
		r.Clusters = append(r.Clusters, ClusterTotal{Cluster: names[i], Total: p.Total})
		if p.Empty() {
			continue
		}
		if r.DataFrom.IsZero() || p.DataFrom.Before(r.DataFrom) {
			r.DataFrom = p.DataFrom
		}
		if r.DataStart.IsZero() || p.DataStart.Before(r.DataStart) {
			r.DataStart = p.DataStart
		}
		r.DataTo, r.DataEnd = maxTime(r.DataTo, p.DataTo), maxTime(r.DataEnd, p.DataEnd)
	}
	// Each cluster's rounding line stays its own, so the lines of one
	// cluster add up to its total.
	r.Lines = slices.DeleteFunc(r.Lines, func(l Line) bool { return l.Type == LineRounding })
	for _, p := range parts {
		for _, l := range p.Lines {
			if l.Type == LineRounding {
				r.Lines = append(r.Lines, l)
			}
		}
	}
	_, dataEnd := r.DataBounds()
	var leaves map[string][]time.Time
	if _, _, leaves, err = collectFindings(ctx, st, from, to); err != nil {
		return nil, err
	}
	if r.Coverage, err = buildCoverage(ctx, st, from, to, dataEnd, book.Location, leaves); err != nil {
		return nil, err
	}
	return r, nil
}

// HasClusters says whether the report names clusters: a cluster's own
// bill, or a fleet's of several. A single-cluster install's bill does
// not, and its files keep their columns.
func (r *Report) HasClusters() bool { return r.Cluster != "" || len(r.Clusters) > 1 }

// LineCluster is the cluster a line of r is from ("" where r names none).
func (r *Report) LineCluster(l Line) string {
	if l.Cluster != "" {
		return l.Cluster
	}
	return r.Cluster
}

// CSVClusterColumns are appended to the finance CSV's header when the
// report names clusters (HasClusters): the line's cluster.
var CSVClusterColumns = []string{"cluster"}

// focusClusterColumns are the FOCUS columns of a bill that names
// clusters: the cluster is a sub account (docs/focus.md, "Clusters").
var focusClusterColumns = []string{"SubAccountId", "SubAccountName"}

// withClusterColumns is the FOCUS header h with the sub account columns,
// in their alphabetical places among FOCUS's own (before the x_ ones),
// when r names clusters.
func withClusterColumns(r *Report, h []string) []string {
	if !r.HasClusters() {
		return h
	}
	h = slices.Clone(h)
	for _, col := range focusClusterColumns {
		i := slices.IndexFunc(h, func(c string) bool { return strings.HasPrefix(c, "x_") || c > col })
		if i < 0 {
			i = len(h)
		}
		h = slices.Insert(h, i, col)
	}
	return h
}
