package kubemeta

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuledger/gpuledger/attribution"
)

const (
	gpuUUID0 = "GPU-4b0e8f5a-8d5c-4f2e-9a34-1d2c3b4a5f60"
	gpuUUID1 = "GPU-9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f"
	migUUID0 = "MIG-5e6f7a8b-9c0d-5e1f-a2b3-c4d5e6f7a8b9"
)

func attr(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }

// gpuSlice is a ResourceSlice as NVIDIA's DRA driver publishes one: node
// scoped, pool named after the node, attributes bare (the driver's own
// domain) or qualified.
func gpuSlice(name, nodeName string, generation int64, devs ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   "gpu.nvidia.com",
			Pool:     resourcev1.ResourcePool{Name: nodeName, Generation: generation, ResourceSliceCount: 1},
			NodeName: ptrTo(nodeName),
			Devices:  devs,
		},
	}
}

func sliceFixtures() []any {
	return []any{
		gpuSlice("gpu-node-a-gpu.nvidia.com-x7k2p", thisNode, 1,
			resourcev1.Device{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"uuid":                            attr(gpuUUID0),
				"type":                            attr("gpu"),
				"productName":                     attr("NVIDIA A100-SXM4-80GB"),
				"index":                           {IntValue: ptrTo[int64](0)},
				"driverVersion":                   {VersionValue: ptrTo("580.82.7")},
				"resource.kubernetes.io/pcieRoot": attr("pci0000:00"),
			}},
			resourcev1.Device{Name: "gpu-1-mig-1g10gb-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"gpu.nvidia.com/uuid":       attr(migUUID0),
				"gpu.nvidia.com/parentUUID": attr(gpuUUID1),
				"gpu.nvidia.com/type":       attr("mig"),
				"gpu.nvidia.com/profile":    attr("1g.10gb"),
				"gpu.nvidia.com/mig":        {BoolValue: ptrTo(true)},
			}},
		),
		// Another driver, no attributes at all.
		&resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-a-dra.net-abc"},
			Spec: resourcev1.ResourceSliceSpec{Driver: "dra.net", Pool: resourcev1.ResourcePool{Name: thisNode, Generation: 3, ResourceSliceCount: 1},
				NodeName: ptrTo(thisNode), Devices: []resourcev1.Device{{Name: "eth1"}}},
		},
		// Another node's GPU: the server never sends it.
		gpuSlice("gpu-node-b-gpu.nvidia.com-q1w2e", "gpu-node-b", 1,
			resourcev1.Device{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": attr(gpuUUID1)}}),
	}
}

var wantDRA = []attribution.DRADevice{
	{Driver: "dra.net", Pool: thisNode, Name: "eth1"},
	{Driver: "gpu.nvidia.com", Pool: thisNode, Name: "gpu-0", Attributes: map[string]string{
		"uuid": gpuUUID0, "type": "gpu", "productName": "NVIDIA A100-SXM4-80GB", "index": "0",
		"driverVersion": "580.82.7", "pcieRoot": "pci0000:00",
	}},
	{Driver: "gpu.nvidia.com", Pool: thisNode, Name: "gpu-1-mig-1g10gb-0", Attributes: map[string]string{
		"uuid": migUUID0, "parentUUID": gpuUUID1, "type": "mig", "profile": "1g.10gb", "mig": "true",
	}},
}

// newDRASource starts a source that watches ResourceSlices too, logging
// into the returned buffer.
func newDRASource(t *testing.T, api *apiServer) (*InformerSource, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := NodeWatches(api.client(), thisNode)
	w.ResourceSlices = ResourceSliceWatch(api.resourceClient(), thisNode)
	logs := &lockedBuffer{}
	s, err := NewInformerSource(ctx, w, thisNode, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("NewInformerSource: %v", err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

func putAll(api *apiServer, objs []any) {
	for _, o := range objs {
		api.put(o.(*resourcev1.ResourceSlice))
	}
}

func TestResourceSlicesListAndWatch(t *testing.T) {
	for _, wire := range []string{"protobuf", "json"} {
		t.Run(wire, func(t *testing.T) {
			api := newAPIServer(t, fixtures()...)
			putAll(api, sliceFixtures())
			if wire == "json" {
				api.answerJSONOnly()
			}
			s, logs := newDRASource(t, api)

			got := snapshot(t, s)
			if !reflect.DeepEqual(got.DRADevices, wantDRA) {
				t.Errorf("DRADevices =\n%+v\nwant\n%+v", got.DRADevices, wantDRA)
			}
			if len(got.Pods) != 2 {
				t.Errorf("pods = %d, want 2: the slice watch must not disturb the rest", len(got.Pods))
			}
			for _, sel := range api.selectorsSeen()["resourceslices"] {
				if sel != "spec.nodeName="+thisNode {
					t.Errorf("resourceslices requested with field selector %q, want spec.nodeName=%s", sel, thisNode)
				}
			}
			if len(api.selectorsSeen()["resourceslices"]) == 0 {
				t.Error("resourceslices never requested")
			}

			// The driver republishes its pool at a new generation, with a
			// second slice; the old slice lingers for a while and must not
			// count.
			api.put(gpuSlice("gpu-node-a-gpu.nvidia.com-r9t8y", thisNode, 2,
				resourcev1.Device{Name: "gpu-2", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": attr(gpuUUID1)}}))
			m := eventually(t, s, "the new generation", func(m attribution.Metadata) bool {
				return len(m.DRADevices) == 2
			})
			if d := m.DRADevices[1]; d.Name != "gpu-2" || d.Attributes["uuid"] != gpuUUID1 {
				t.Errorf("device of the new generation = %+v", d)
			}

			// Deleting every slice of the node empties the list.
			for _, o := range sliceFixtures() {
				if rs := o.(*resourcev1.ResourceSlice); *rs.Spec.NodeName == thisNode {
					api.delete(rs)
				}
			}
			api.delete(gpuSlice("gpu-node-a-gpu.nvidia.com-r9t8y", thisNode, 2))
			eventually(t, s, "the deletions", func(m attribution.Metadata) bool { return len(m.DRADevices) == 0 })
			if strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("warnings with a working DRA API:\n%s", logs)
			}
		})
	}
}

// TestResourceSlicesUnavailable: a cluster without resource.k8s.io/v1 (404)
// or a collector without the RBAC rule (403) still collects: the source
// starts, pods are there, no DRA devices, one warning. A ResourceSlice API
// that fails (500) does not hold the start either; it is retried quietly.
func TestResourceSlicesUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name     string
		breakIt  func(*apiServer)
		warnings int
	}{
		{"404 group not served", (*apiServer).withoutDRA, 1},
		{"403 forbidden", func(a *apiServer) { a.forbid("resourceslices") }, 1},
		{"500 server error", func(a *apiServer) { a.breakResource("resourceslices") }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := newAPIServer(t, fixtures()...)
			putAll(api, sliceFixtures())
			tt.breakIt(api)
			s, logs := newDRASource(t, api)
			m := snapshot(t, s)
			if len(m.DRADevices) != 0 {
				t.Errorf("DRADevices = %+v, want none", m.DRADevices)
			}
			if len(m.Pods) != 2 || m.NodeLabels["nvidia.com/gpu.replicas"] != "7" {
				t.Errorf("metadata incomplete without DRA: %+v", m)
			}
			if n := strings.Count(logs.String(), "cannot watch ResourceSlices"); n != tt.warnings {
				t.Errorf("%d warnings about ResourceSlices, want %d:\n%s", n, tt.warnings, logs)
			}
		})
	}
}

// TestResourceSlicesRecover: RBAC granted while the collector runs; the
// informer's own retry picks the slices up.
func TestResourceSlicesRecover(t *testing.T) {
	api := newAPIServer(t, fixtures()...)
	putAll(api, sliceFixtures())
	api.forbid("resourceslices")
	s, logs := newDRASource(t, api)
	if m := snapshot(t, s); len(m.DRADevices) != 0 {
		t.Fatalf("DRADevices while forbidden = %+v", m.DRADevices)
	}
	api.mu.Lock()
	delete(api.forbidden, "resourceslices")
	api.mu.Unlock()
	m := eventually(t, s, "DRA devices after the grant", func(m attribution.Metadata) bool { return len(m.DRADevices) == len(wantDRA) })
	if !reflect.DeepEqual(m.DRADevices, wantDRA) {
		t.Errorf("DRADevices = %+v, want %+v", m.DRADevices, wantDRA)
	}
	if !strings.Contains(logs.String(), "ResourceSlices readable again") {
		t.Errorf("no recovery log:\n%s", logs)
	}
}

// TestResourceSliceErrorLogsOnce: the reflector calls the handler on every
// retry; an absent API is said once until it comes back.
func TestResourceSliceErrorLogsOnce(t *testing.T) {
	logs := &lockedBuffer{}
	s := &InformerSource{log: slog.New(slog.NewTextHandler(logs, nil))}
	gr := schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}
	for range 5 {
		s.resourceSliceError(context.Background(), nil, apierrors.NewNotFound(gr, ""))
		s.resourceSliceError(context.Background(), nil, apierrors.NewForbidden(gr, "", nil))
		s.resourceSliceError(context.Background(), nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "list", gr, "", "404 page not found", 0, true))
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs)
	}
	if !s.slicesUnavailable.Load() {
		t.Error("not marked unavailable")
	}
	s.resourceSliceError(context.Background(), nil, apierrors.NewInternalError(http.ErrHandlerTimeout))
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("a transient error logged a warning:\n%s", logs)
	}
}

func TestDeviceAttributes(t *testing.T) {
	got := deviceAttributes(map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"gpu.nvidia.com/uuid": attr("qualified"),
		"uuid":                attr("bare"),
		"b.example/model":     attr("b"),
		"a.example/model":     attr("a"),
		"empty":               {}, // a value type this collector does not know
		"cores":               {IntValue: ptrTo[int64](-3)},
	})
	want := map[string]string{"uuid": "bare", "model": "a", "cores": "-3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deviceAttributes = %v, want %v", got, want)
	}
	if got := deviceAttributes(nil); got != nil {
		t.Errorf("deviceAttributes(nil) = %v, want nil", got)
	}
}

// lockedBuffer is a bytes.Buffer the informers' goroutines may log into.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func ptrTo[T any](v T) *T { return &v }
