package tenancy

import "strings"

// DefaultTeamLabel is the label key that names a team when Config leaves
// TeamLabel empty.
const DefaultTeamLabel = "team"

// ResolveTeam says which team pays for a container of a pod in namespace,
// by the namespace alone: its team label (key, DefaultTeamLabel when
// empty) where it has a non-blank one, else the namespace name. Cluster
// admins set namespace labels; whoever deploys sets pod labels, so a pod's
// own label never counts here (TeamResolver.Resolve weighs it).
func ResolveTeam(nsLabels map[string]string, namespace, key string) string {
	if key == "" {
		key = DefaultTeamLabel
	}
	if t := nsLabels[key]; strings.TrimSpace(t) != "" {
		return t
	}
	return namespace
}

// TeamResolver resolves teams for one metadata snapshot. With FromPodLabel
// (the ledger format's rule; the collector's --team-from-pod-label=false
// turns it off) a pod's own team label counts where its namespace has a
// blank one or none. Pod labels are forgeable by whoever deploys, so a pod
// label naming a team that a labelled namespace owns (compared trimmed and
// case-insensitively) is refused and the namespace name pays; so is one
// naming an unlabelled namespace, whose name is its team.
type TeamResolver struct {
	Key          string
	FromPodLabel bool
	owned        map[string]struct{}
}

// NewTeamResolver prepares a resolver for namespaces (namespace -> labels).
// It reads the namespaces' teams only where pod labels may count.
func NewTeamResolver(namespaces map[string]map[string]string, key string, fromPodLabel bool) *TeamResolver {
	r := &TeamResolver{Key: key, FromPodLabel: fromPodLabel}
	r.Reset(namespaces)
	return r
}

// Reset prepares r for another metadata snapshot, reusing its set of owned
// teams (the engine keeps one resolver and resets it every cycle).
func (r *TeamResolver) Reset(namespaces map[string]map[string]string) {
	if r.Key == "" {
		r.Key = DefaultTeamLabel
	}
	if !r.FromPodLabel {
		r.owned = nil
		return
	}
	if r.owned == nil {
		r.owned = make(map[string]struct{}, len(namespaces))
	}
	clear(r.owned)
	for ns, l := range namespaces {
		t := teamKey(l[r.Key])
		if t == "" {
			t = teamKey(ns) // an unlabelled namespace bills its own name
		}
		r.owned[t] = struct{}{}
	}
}

func teamKey(t string) string { return strings.ToLower(strings.TrimSpace(t)) }

// Resolve is the team of a pod with podLabels in namespace (labels
// nsLabels). refused reports a pod label that was not taken because a
// labelled namespace owns that team: someone tried to bill another team.
func (r *TeamResolver) Resolve(nsLabels, podLabels map[string]string, namespace string) (team string, refused bool) {
	if t := nsLabels[r.Key]; strings.TrimSpace(t) != "" {
		return t, false
	}
	if !r.FromPodLabel {
		return namespace, false
	}
	t := podLabels[r.Key]
	k := teamKey(t)
	if k == "" {
		return namespace, false
	}
	if _, ok := r.owned[k]; ok {
		return namespace, true
	}
	return t, false
}
