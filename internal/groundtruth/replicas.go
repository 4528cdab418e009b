package groundtruth

import (
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

const (
	labelGKEClients  = "cloud.google.com/gke-max-shared-clients-per-gpu"
	labelGKEStrategy = "cloud.google.com/gke-gpu-sharing-strategy"
)

// replicaRule answers how many replicas share a device: from a node label
// when the contract names one for the resource, else the distinct shared
// IDs seen on that device, an estimate.
type replicaRule struct {
	labels map[string]int // validated positive counts, by label name
	// bad are the replica labels present with a value that is not a
	// positive integer: the slices they would divide hold nothing.
	bad  map[string]bool
	seen map[string]map[string]bool
}

func newReplicaRule(sc *scenario.Scenario, idx *deviceIndex) (*replicaRule, error) {
	r := &replicaRule{labels: make(map[string]int), bad: make(map[string]bool), seen: make(map[string]map[string]bool)}
	for _, k := range sortedKeys(sc.Node.Labels) {
		if !isReplicaLabel(k) {
			continue
		}
		v := sc.Node.Labels[k]
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n >= 1e9 || strings.ContainsAny(v, "+-") {
			r.bad[k] = true
			continue
		}
		r.labels[k] = n
	}
	forEachID(sc, func(_, id string) {
		s, ok := idx.resolveSlice(id)
		if !ok || (s.kind != sliceReplica && s.kind != sliceGKEShared) {
			return
		}
		u := s.dev.uuid()
		if r.seen[u] == nil {
			r.seen[u] = make(map[string]bool)
		}
		r.seen[u][id] = true
	})
	return r, nil
}

func isReplicaLabel(k string) bool {
	return k == labelGKEClients || (strings.HasPrefix(k, "nvidia.com/") && strings.HasSuffix(k, ".replicas"))
}

// count is the replicas of slice s listed under resource; ok is false
// when the label that decides is present but not a positive integer.
func (r *replicaRule) count(resource string, s slice) (n int, estimated, ok bool) {
	label := replicaLabel(resource, s)
	if r.bad[label] {
		return 0, false, false
	}
	if n, ok := r.labels[label]; ok {
		return n, false, true
	}
	return max(1, len(r.seen[s.dev.uuid()])), true, true
}

// replicaLabel names the label that sets a slice's replicas (ledger.md):
// GKE's clients-per-GPU label for its vgpu IDs; for MIG resources of the
// mixed strategy, nvidia.com/mig-<profile>.replicas, also when the device
// plugin renamed the resource nvidia.com/mig-<profile>.shared (the
// whole-GPU label never applies to them); else nvidia.com/gpu.replicas.
func replicaLabel(resource string, s slice) string {
	if s.kind == sliceGKEShared {
		return labelGKEClients
	}
	if profile, ok := strings.CutPrefix(resource, "nvidia.com/mig-"); ok {
		profile = strings.TrimSuffix(profile, ".shared")
		return "nvidia.com/mig-" + profile + ".replicas"
	}
	return labelReplicas
}

// forEachID visits every kubelet device ID of every container, init
// containers included, with its resource name.
func forEachID(sc *scenario.Scenario, f func(resource, id string)) {
	for pi := range sc.Pods {
		p := &sc.Pods[pi]
		for _, list := range [][]scenario.Container{p.InitContainers, p.Containers} {
			for _, c := range list {
				for _, d := range c.Devices {
					for _, id := range d.IDs {
						f(d.Resource, id)
					}
				}
			}
		}
	}
}
