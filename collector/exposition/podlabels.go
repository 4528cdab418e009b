package exposition

import (
	"log/slog"
	"strings"

	"github.com/gpuledger/gpuledger/attribution"
)

// podLabelPrefix keeps copied pod labels in their own name space: whoever
// deploys a pod sets its labels, and a pod label named "team" must not be
// able to replace the team label that decides who pays.
const podLabelPrefix = "label_"

// allowlist is the opt-in list of pod label keys copied onto container series.
type allowlist struct {
	keys  []string // Kubernetes label keys, in the order given
	names []string // Prometheus label names: label_<sanitised key>
}

// newAllowlist sanitises keys into label names, dropping empty keys and keys
// whose sanitised name is already taken (app.kubernetes.io/name and
// app_kubernetes_io_name would both be label_app_kubernetes_io_name, and a
// descriptor cannot carry one name twice).
func newAllowlist(keys []string, log *slog.Logger) allowlist {
	var a allowlist
	taken := make(map[string]string, len(keys))
	for _, k := range keys {
		if k == "" {
			continue
		}
		name := podLabelPrefix + sanitiseLabelName(k)
		if prev, dup := taken[name]; dup {
			if prev != k {
				log.Warn("pod label allowlist entry ignored: its label name is already used",
					"key", k, "label", name, "used_by", prev)
			}
			continue
		}
		taken[name] = k
		a.keys = append(a.keys, k)
		a.names = append(a.names, name)
	}
	return a
}

// sanitiseLabelName maps a Kubernetes label key onto the legacy Prometheus
// label name alphabet [a-zA-Z0-9_], so the label stays usable in PromQL
// without quoting (the same mapping kube-state-metrics uses).
func sanitiseLabelName(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// podKey names a pod the way ContainerCycle does.
type podKey struct{ namespace, pod string }

// podValues are one pod's allowlisted label values, in allowlist order, and
// the same values joined into one string for use in a map key.
type podValues struct {
	values []string
	joined string
}

// podLabelIndex looks up the allowlisted label values of a pod. It is
// rebuilt each cycle into the same map.
type podLabelIndex struct {
	list  allowlist
	pods  map[podKey]podValues
	empty podValues // for pods without metadata: every value empty
}

func newPodLabelIndex(list allowlist) *podLabelIndex {
	empty := make([]string, len(list.keys))
	return &podLabelIndex{
		list:  list,
		pods:  make(map[podKey]podValues),
		empty: podValues{values: empty, joined: joinValues(empty)},
	}
}

// load replaces the index with the given pods' labels.
func (x *podLabelIndex) load(pods []attribution.PodMeta) {
	clear(x.pods)
	if len(x.list.keys) == 0 {
		return
	}
	for _, p := range pods {
		vals := make([]string, len(x.list.keys))
		for i, k := range x.list.keys {
			vals[i] = p.Labels[k]
		}
		x.pods[podKey{p.Namespace, p.Name}] = podValues{values: vals, joined: joinValues(vals)}
	}
}

// lookup returns the allowlisted label values of a pod; all empty when the
// pod has no metadata this cycle.
func (x *podLabelIndex) lookup(namespace, pod string) podValues {
	if len(x.list.keys) == 0 {
		return podValues{}
	}
	if v, ok := x.pods[podKey{namespace, pod}]; ok {
		return v
	}
	return x.empty
}

// joinValues joins label values with a byte that cannot occur in valid
// UTF-8, so distinct value lists give distinct strings.
func joinValues(vals []string) string {
	return strings.Join(vals, "\xff")
}
