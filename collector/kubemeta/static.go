package kubemeta

import (
	"context"
	"maps"
	"slices"

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
			p.Containers = slices.Clone(p.Containers)
			p.InitContainers = slices.Clone(p.InitContainers)
			out.Pods[i] = p
		}
	}
	if m.DRADevices != nil {
		out.DRADevices = make([]attribution.DRADevice, len(m.DRADevices))
		for i, d := range m.DRADevices {
			d.Attributes = maps.Clone(d.Attributes)
			out.DRADevices[i] = d
		}
	}
	return out
}
