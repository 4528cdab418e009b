package sim

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// metaSource is the Kubernetes metadata of the simulated node.
type metaSource struct {
	n          *Node
	nodeLabels map[string]string
	namespaces map[string]map[string]string
	dra        []attribution.DRADevice // shared between snapshots, read-only
}

var _ kubemeta.Source = (*metaSource)(nil)

func newMetaSource(n *Node, sc *scenario.Scenario) *metaSource {
	m := &metaSource{n: n, nodeLabels: copyMap(sc.Node.Labels), namespaces: map[string]map[string]string{}}
	for _, ns := range sc.Namespaces {
		m.namespaces[ns.Name] = copyMap(ns.Labels)
	}
	m.dra = draDevices(sc.Node.ResourceSlices)
	return m
}

// draDevices lists every device of the node's ResourceSlices, attributes
// keyed as attribution.DRADevice documents (without a domain prefix).
func draDevices(rss []scenario.ResourceSlice) []attribution.DRADevice {
	var out []attribution.DRADevice
	for _, rs := range rss {
		for _, d := range rs.Devices {
			out = append(out, attribution.DRADevice{
				Driver: rs.Driver, Pool: rs.Pool, Name: d.Name,
				Attributes: unqualifiedAttributes(rs.Driver, d.Attributes),
			})
		}
	}
	return out
}

// unqualifiedAttributes drops the domain of qualified attribute names
// ("gpu.nvidia.com/uuid" -> "uuid"). Kubernetes reads an unqualified name
// as being in the driver's domain, so where two names meet on one key the
// driver's own attribute wins over another domain's.
func unqualifiedAttributes(driver string, attrs map[string]string) map[string]string {
	out := make(map[string]string, len(attrs))
	own := make(map[string]bool, len(attrs))
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		name, isOwn := k, true
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			name, isOwn = k[i+1:], k[:i] == driver
		}
		if _, taken := out[name]; taken && (own[name] || !isOwn) {
			continue
		}
		out[name], own[name] = attrs[k], isOwn
	}
	return out
}

// Snapshot returns the node and namespace labels, the pods alive now with
// their annotations as edited by then, and the node's DRA devices. Label
// maps are copies; pods' maps and the DRA devices are shared between
// snapshots and must be treated as read-only.
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
		DRADevices: m.dra,
	}
	for ns, l := range m.namespaces {
		md.Namespaces[ns] = maps.Clone(l)
	}
	t := m.n.clock.offset()
	for _, p := range m.n.pods {
		if p.aliveAt(t) {
			md.Pods = append(md.Pods, p.metaAt(t))
		}
	}
	return md, nil
}
