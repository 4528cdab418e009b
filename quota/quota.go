// Package quota is the GPU quota a team is promised, as gpuledger records
// and prices it: the entries a cluster's quota objects give (ResourceQuota,
// Kueue ClusterQueues, Volcano Queues, KAI queues), the changes the ledger
// stores when they are created, changed or deleted, and the intervals a
// report integrates. Pure: the standard library and the GPU catalogue only;
// reading the objects from Kubernetes is quota/kubequota's job.
package quota

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/gpu"
)

// Sources of quota, as the ledger, the metric's source label and the price
// book name them.
const (
	SourceResourceQuota = "resourcequota"
	SourceKueue         = "kueue"
	SourceVolcano       = "volcano"
	SourceKAI           = "kai"
)

// Sources lists every source, in the order reports show them.
func Sources() []string {
	return []string{SourceResourceQuota, SourceKueue, SourceVolcano, SourceKAI}
}

// ValidSource reports whether s names a source.
func ValidSource(s string) bool { return slices.Contains(Sources(), s) }

// ResourceAnyGPU is the resource of a quota on nvidia.com/gpu that names no
// GPU model: any whole GPU.
const ResourceAnyGPU = "gpu"

// migPrefix starts the resource of a MIG profile quota ("mig-1g.10gb").
const migPrefix = "mig-"

// Bounds on what a quota object may say, so a hostile or broken object
// cannot overflow a sum or bloat the ledger.
const (
	// MaxMilli is the largest quota or limit recorded: a million devices,
	// in thousandths.
	MaxMilli = 1_000_000_000
	// MaxNameLen bounds source objects', teams' and resources' names (a
	// Kubernetes name is at most 253 characters; namespace/name twice that).
	MaxNameLen = 512
)

// Resource maps a Kubernetes extended resource name to a quota resource:
// "nvidia.com/gpu" is ResourceAnyGPU, or model when the quota names one (a
// Kueue flavor's GPU product); "nvidia.com/mig-<profile>" is
// "mig-<profile>". Any other name, or a MIG profile that does not parse,
// is not a GPU quota (false).
func Resource(extended, model string) (string, bool) {
	switch {
	case extended == "nvidia.com/gpu":
		if model = strings.TrimSpace(model); model != "" {
			return model, true
		}
		return ResourceAnyGPU, true
	case strings.HasPrefix(extended, "nvidia.com/mig-"):
		p := strings.TrimPrefix(extended, "nvidia.com/mig-")
		if _, err := gpu.ParseProfile(p); err != nil {
			return "", false
		}
		return migPrefix + p, true
	}
	return "", false
}

// Profile returns the MIG profile of a resource, "" for whole GPUs.
func Profile(resource string) string {
	p, ok := strings.CutPrefix(resource, migPrefix)
	if !ok {
		return ""
	}
	return p
}

// Weight is how many GPUs one device of the resource is: 1 for whole GPUs,
// slices/7 for a MIG profile (a 1g.10gb instance is 1/7 of a GPU, charged
// as the ledger charges it).
func Weight(resource string) (*big.Rat, error) {
	p := Profile(resource)
	if p == "" {
		return big.NewRat(1, 1), nil
	}
	n, err := gpu.ProfileSlices(p)
	if err != nil {
		return nil, fmt.Errorf("quota resource %q: %w", resource, err)
	}
	return big.NewRat(int64(n), gpu.TotalSlices), nil
}

// Key identifies one quota: a source's object and one resource of it.
// Object is "namespace/name" for namespaced objects (ResourceQuota), the
// name for cluster-scoped ones (ClusterQueue, Volcano and KAI queues).
type Key struct {
	Source, Object, Resource string
}

// Entry is one quota at one moment: what Key promises Team.
type Entry struct {
	Key
	Team string
	// Milli is the quota in thousandths of the resource's devices (a
	// ResourceQuota's hard requests, Kueue's nominal quota, Volcano's
	// guarantee or deserved, KAI's quota).
	Milli int64
	// LimitMilli is the ceiling the team may reach by borrowing, in the
	// same unit (Kueue nominal + borrowing limit, Volcano capability, KAI
	// limit); 0 when the source states none.
	LimitMilli int64
}

// Validate checks an entry's names and bounds; errors name the object.
func (e Entry) Validate() error {
	where := e.Source + " " + e.Object
	switch {
	case !ValidSource(e.Source):
		return fmt.Errorf("quota %q: unknown source %q (want one of %s)", e.Object, e.Source, strings.Join(Sources(), ", "))
	case e.Object == "" || len(e.Object) > MaxNameLen:
		return fmt.Errorf("quota of %s: object name is empty or longer than %d", e.Source, MaxNameLen)
	case e.Team == "" || len(e.Team) > MaxNameLen:
		return fmt.Errorf("quota %s: team is empty or longer than %d", where, MaxNameLen)
	case e.Resource == "" || len(e.Resource) > MaxNameLen:
		return fmt.Errorf("quota %s: resource is empty or longer than %d", where, MaxNameLen)
	case e.Milli < 0 || e.Milli > MaxMilli:
		return fmt.Errorf("quota %s %s: %d thousandths is outside 0..%d", where, e.Resource, e.Milli, MaxMilli)
	case e.LimitMilli < 0 || e.LimitMilli > MaxMilli:
		return fmt.Errorf("quota %s %s: limit %d thousandths is outside 0..%d", where, e.Resource, e.LimitMilli, MaxMilli)
	}
	if _, err := Weight(e.Resource); err != nil {
		return fmt.Errorf("quota %s: %w", where, err)
	}
	return nil
}

// GPUs is the quota in GPUs (MIG profiles weighted by their slices).
func (e Entry) GPUs() float64 {
	w, err := Weight(e.Resource)
	if err != nil {
		return 0
	}
	f, _ := new(big.Rat).Mul(big.NewRat(e.Milli, 1000), w).Float64()
	return f
}

// Change is what the ledger stores: from At on, Key promises Entry (or,
// Deleted, nothing).
type Change struct {
	// Cluster is the cluster whose quota object changed (empty: the
	// default cluster's); two clusters' objects of one name are two keys.
	Cluster string
	At      time.Time
	Entry
	Deleted bool
}

// Diff returns the changes that turn the recorded state prev into now at
// time at: new and changed entries, and deletions of entries now lacks.
// Ordered by key, so a replay writes the same rows.
func Diff(prev map[Key]Entry, now []Entry, at time.Time) []Change {
	seen := make(map[Key]bool, len(now))
	var out []Change
	for _, e := range now {
		seen[e.Key] = true
		if p, ok := prev[e.Key]; ok && p == e {
			continue
		}
		out = append(out, Change{At: at, Entry: e})
	}
	for k, p := range prev {
		if !seen[k] {
			out = append(out, Change{At: at, Entry: Entry{Key: k, Team: p.Team}, Deleted: true})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return compareKey(a.Key, b.Key) })
	return out
}

func compareKey(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Resource, b.Resource))
}

// State replays changes (any order; by At, then as given) into the entries
// in force after the last of them.
func State(changes []Change) map[Key]Entry {
	sorted := sortedByTime(changes)
	st := map[Key]Entry{}
	for _, c := range sorted {
		if c.Deleted {
			delete(st, c.Key)
		} else {
			st[c.Key] = c.Entry
		}
	}
	return st
}

func sortedByTime(changes []Change) []Change {
	s := slices.Clone(changes)
	slices.SortStableFunc(s, func(a, b Change) int { return a.At.Compare(b.At) })
	return s
}

// Interval is an entry in force over [From, To).
type Interval struct {
	Entry
	From, To time.Time
}

// Intervals returns the entries in force within [from, to), clipped to it:
// an entry's interval runs from the change that set it (or from, when it
// was set before) to the next change of its key (or to). Changes at or
// after to are ignored. Ordered by key, then time.
func Intervals(changes []Change, from, to time.Time) []Interval {
	if !from.Before(to) {
		return nil
	}
	type open struct {
		e     Entry
		start time.Time
	}
	cur := map[Key]open{}
	var out []Interval
	emit := func(o open, end time.Time) {
		s := o.start
		if s.Before(from) {
			s = from
		}
		if end.After(to) {
			end = to
		}
		if s.Before(end) {
			out = append(out, Interval{Entry: o.e, From: s, To: end})
		}
	}
	for _, c := range sortedByTime(changes) {
		if !c.At.Before(to) {
			break
		}
		if o, ok := cur[c.Key]; ok {
			emit(o, c.At)
			delete(cur, c.Key)
		}
		if !c.Deleted {
			cur[c.Key] = open{e: c.Entry, start: c.At}
		}
	}
	for _, o := range cur {
		emit(o, to)
	}
	slices.SortFunc(out, func(a, b Interval) int {
		return cmp.Or(compareKey(a.Key, b.Key), a.From.Compare(b.From))
	})
	return out
}

// GPUSeconds is the interval's quota in GPU-seconds, exactly: thousandths
// x weight x whole seconds (quota changes are recorded to the second).
func (iv Interval) GPUSeconds() (*big.Rat, error) {
	w, err := Weight(iv.Resource)
	if err != nil {
		return nil, err
	}
	secs := iv.To.Sub(iv.From).Nanoseconds()
	r := new(big.Rat).Mul(big.NewRat(iv.Milli, 1000), w)
	return r.Mul(r, big.NewRat(secs, int64(time.Second))), nil
}

// Store is where the ledger keeps quota changes: the embedded file store
// and ClickHouse implement it beside their rows.
type Store interface {
	// AppendQuota writes changes durably in one transaction. A change
	// whose (source, object, resource, At to the second) is stored
	// replaces it: a replay changes nothing.
	AppendQuota(ctx context.Context, changes []Change) error
	// QuotaChanges streams what Intervals(changes, from, to) needs: for
	// each key the last change at or before from, and every change in
	// (from, to); ordered by At, then source, object, resource. At is
	// whole seconds.
	QuotaChanges(ctx context.Context, from, to time.Time, fn func(Change) error) error
}
