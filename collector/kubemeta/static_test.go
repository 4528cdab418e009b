package kubemeta

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

func TestStaticSnapshotIsACopy(t *testing.T) {
	s := Static{Meta: attribution.Metadata{
		NodeLabels: map[string]string{"a": "1"},
		Namespaces: map[string]map[string]string{"ns": {"team": "t"}},
		Pods: []attribution.PodMeta{{
			UID: "u", Namespace: "ns", Name: "p",
			Labels:         map[string]string{"l": "v"},
			Containers:     []attribution.ContainerMeta{{Name: "c", ID: "id"}},
			InitContainers: []attribution.ContainerMeta{{Name: "i", ID: "iid", Sidecar: true}},
		}},
		DRADevices: []attribution.DRADevice{{Driver: "gpu.nvidia.com", Pool: "n", Name: "gpu-0", Attributes: map[string]string{"uuid": "GPU-1"}}},
	}}
	want := attribution.Metadata{
		NodeLabels: map[string]string{"a": "1"},
		Namespaces: map[string]map[string]string{"ns": {"team": "t"}},
		Pods: []attribution.PodMeta{{
			UID: "u", Namespace: "ns", Name: "p",
			Labels:         map[string]string{"l": "v"},
			Containers:     []attribution.ContainerMeta{{Name: "c", ID: "id"}},
			InitContainers: []attribution.ContainerMeta{{Name: "i", ID: "iid", Sidecar: true}},
		}},
		DRADevices: []attribution.DRADevice{{Driver: "gpu.nvidia.com", Pool: "n", Name: "gpu-0", Attributes: map[string]string{"uuid": "GPU-1"}}},
	}
	got, err := s.Snapshot(context.Background())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot = %+v, %v; want %+v", got, err, want)
	}
	got.NodeLabels["a"] = "2"
	got.Namespaces["ns"]["team"] = "x"
	got.Pods[0].Labels["l"] = "x"
	got.Pods[0].Containers[0].ID = "x"
	got.Pods[0].Name = "x"
	got.Pods[0].InitContainers[0].ID = "x"
	got.DRADevices[0].Attributes["uuid"] = "x"
	got.DRADevices[0].Name = "x"
	again, _ := s.Snapshot(context.Background())
	if !reflect.DeepEqual(again, want) {
		t.Errorf("changing a snapshot changed the source: %+v", again)
	}
}
