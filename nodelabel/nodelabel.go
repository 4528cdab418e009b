// Package nodelabel is the vocabulary of node labels recorded over time:
// the value a node carried for one label key, from a second on. The
// ledger rows name nodes, not their labels, and a node may be relabelled
// or removed within a month, so the cluster component records each
// change and a report reads the values as they stood at the period's end
// (docs/report.md, "Energy and carbon"). Standard library only.
package nodelabel

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Bounds on what is recorded: Kubernetes' own limits on names, label keys
// and values, and changes per call or read (a fleet of 10,000 nodes
// relabelled a hundred times over).
const (
	MaxNodeLen  = 253
	MaxKeyLen   = 253 + 1 + 63
	MaxValueLen = 63
	MaxChanges  = 1_000_000
)

// Change is one node's label key set to Value at At (whole seconds), or
// removed from it (Deleted, Value empty). A node deleted from the cluster
// is no change: its last value stays recorded.
type Change struct {
	// Cluster is the node's cluster (empty: the default cluster's): a
	// node is (Cluster, Node), and NodeLabels keys a node of another
	// cluster than the default as "cluster/node".
	Cluster string
	Node    string
	Key     string
	Value   string
	At      time.Time
	Deleted bool
}

// Store records label changes and reads the values in force; both
// ledger stores are one.
type Store interface {
	AppendNodeLabels(ctx context.Context, changes []Change) error
	// NodeLabels is each node's value of key as last recorded at or
	// before at; a node whose last change removed the label is absent.
	NodeLabels(ctx context.Context, key string, at time.Time) (map[string]string, error)
}

var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidKey reports whether key is a Kubernetes label key.
func ValidKey(key string) bool {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok {
		prefix, name = "", key
	}
	return labelName.MatchString(name) && (!ok || len(prefix) <= 253 && labelPrefix.MatchString(prefix))
}

// ValidValue reports whether v is a Kubernetes label value (empty is one).
func ValidValue(v string) bool { return v == "" || labelName.MatchString(v) }

// Validate checks changes for a store that holds times in [lo, hi]:
// errors name the change's index, node, key and the field at fault, and
// one call may not set one node's key twice in one second. Both ledger
// stores use it, so both refuse the same input.
func Validate(changes []Change, lo, hi time.Time) error {
	if len(changes) > MaxChanges {
		return fmt.Errorf("%d node label changes in one call, more than the %d allowed", len(changes), MaxChanges)
	}
	type second struct {
		cluster, node, key string
		at                 int64
	}
	seen := make(map[second]int, len(changes))
	for i := range changes {
		c := &changes[i]
		where := fmt.Sprintf("node label change %d (node %.300q key %.300q at %s)", i, c.Node, c.Key, c.At.UTC().Format(time.RFC3339))
		switch {
		case c.At.IsZero():
			return fmt.Errorf("%s: at is not set", where)
		case c.At.Before(lo) || c.At.After(hi):
			return fmt.Errorf("%s: at is outside %d-%d", where, lo.UTC().Year(), hi.UTC().Year())
		case c.Node == "" || len(c.Node) > MaxNodeLen:
			return fmt.Errorf("%s: node name is empty or longer than %d", where, MaxNodeLen)
		case !ValidKey(c.Key):
			return fmt.Errorf("%s: key is not a Kubernetes label key", where)
		case len(c.Value) > MaxValueLen || !ValidValue(c.Value):
			return fmt.Errorf("%s: value %.100q is not a Kubernetes label value", where, c.Value)
		case c.Deleted && c.Value != "":
			return fmt.Errorf("%s: a removal carries no value", where)
		}
		k := second{c.Cluster, c.Node, c.Key, c.At.Unix()}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%s: changes %d and %d set the same node's label in the same second", where, j, i)
		}
		seen[k] = i
	}
	return nil
}

// Diff is what to append at at so that recorded (node -> value of key)
// becomes now: a change for each node whose value is new or differs, a
// removal for each recorded node that is still in the cluster (present)
// but lost the label. A recorded node that present denies was deleted
// from the cluster: no change, its value stays. The changes are ordered
// by node.
func Diff(key string, recorded, now map[string]string, present func(node string) bool, at time.Time) []Change {
	var out []Change
	for n, v := range now {
		if old, ok := recorded[n]; !ok || old != v {
			out = append(out, Change{Node: n, Key: key, Value: v, At: at})
		}
	}
	for n := range recorded {
		if _, ok := now[n]; !ok && present(n) {
			out = append(out, Change{Node: n, Key: key, At: at, Deleted: true})
		}
	}
	sortChanges(out)
	return out
}

func sortChanges(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int { return strings.Compare(a.Node, b.Node) })
}

// State replays changes (any order) into each node's value of key at
// at: the last change at or before at per node, a removal leaving none.
// It is what a store's NodeLabels returns, for tests and the recorder.
func State(changes []Change, key string, at time.Time) map[string]string {
	type last struct {
		at time.Time
		c  Change
	}
	lasts := map[string]last{}
	for _, c := range changes {
		if c.Key != key || c.At.After(at) {
			continue
		}
		if l, ok := lasts[c.Node]; !ok || !c.At.Before(l.at) {
			lasts[c.Node] = last{c.At, c}
		}
	}
	out := map[string]string{}
	for n, l := range lasts {
		if !l.c.Deleted {
			out[n] = l.c.Value
		}
	}
	return out
}
