package sim

import (
	"context"
	"errors"
	"maps"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/collector/scenario"
)

// metaSource is the Kubernetes metadata of the simulated node.
type metaSource struct {
	n          *Node
	nodeLabels map[string]string
	namespaces map[string]map[string]string
}

var _ kubemeta.Source = (*metaSource)(nil)

func newMetaSource(n *Node, sc *scenario.Scenario) *metaSource {
	m := &metaSource{n: n, nodeLabels: copyMap(sc.Node.Labels), namespaces: map[string]map[string]string{}}
	for _, ns := range sc.Namespaces {
		m.namespaces[ns.Name] = copyMap(ns.Labels)
	}
	return m
}

// Snapshot returns the node and namespace labels and the pods alive now.
// Label maps are copies; pods' maps are shared between snapshots and must
// be treated as read-only.
func (m *metaSource) Snapshot(ctx context.Context) (attribution.Metadata, error) {
	if err := ctx.Err(); err != nil {
		return attribution.Metadata{}, err
	}
	m.n.mu.Lock()
	closed := m.n.closed
	m.n.mu.Unlock()
	if closed {
		return attribution.Metadata{}, errors.New("cannot snapshot metadata: simulated node is closed")
	}
	md := attribution.Metadata{
		NodeLabels: maps.Clone(m.nodeLabels),
		Namespaces: make(map[string]map[string]string, len(m.namespaces)),
	}
	for ns, l := range m.namespaces {
		md.Namespaces[ns] = maps.Clone(l)
	}
	t := m.n.clock.offset()
	for _, p := range m.n.pods {
		if p.aliveAt(t) {
			md.Pods = append(md.Pods, p.meta)
		}
	}
	return md, nil
}
