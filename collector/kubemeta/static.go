package kubemeta

import (
	"context"
	"maps"

	"github.com/gpuledger/gpuledger/attribution"
)

// Static is a Source that always returns the same metadata.
type Static struct {
	Meta attribution.Metadata
}

var _ Source = Static{}

// Snapshot returns a deep copy of s.Meta, so callers cannot change it.
func (s Static) Snapshot(context.Context) (attribution.Metadata, error) {
	return copyMetadata(s.Meta), nil
}

func copyMetadata(m attribution.Metadata) attribution.Metadata {
	out := attribution.Metadata{NodeLabels: maps.Clone(m.NodeLabels)}
	if m.Namespaces != nil {
		out.Namespaces = make(map[string]map[string]string, len(m.Namespaces))
		for ns, labels := range m.Namespaces {
			out.Namespaces[ns] = maps.Clone(labels)
		}
	}
	if m.Pods != nil {
		out.Pods = make([]attribution.PodMeta, len(m.Pods))
		for i, p := range m.Pods {
			p.Labels = maps.Clone(p.Labels)
			p.Annotations = maps.Clone(p.Annotations)
			if p.Containers != nil {
				p.Containers = append([]attribution.ContainerMeta(nil), p.Containers...)
			}
			out.Pods[i] = p
		}
	}
	return out
}
