package kubemeta

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gpuledger/gpuledger/attribution"
)

const (
	thisNode = "gpu-node-a"
	ctrA     = "3f9a1c0d2b4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"
	ctrB     = "b1e2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	ctrInit  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	ctrSide  = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

var podStart = time.Date(2026, 11, 1, 0, 0, 5, 0, time.UTC)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// pod returns a running pod with one "main" container and the given status.
func pod(ns, name, uid, nodeName string, phase corev1.PodPhase, statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "main"}},
		},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: statuses},
	}
}

// trainPod has two containers listed in spec order different from the
// status order, a plain init container and a sidecar (restartPolicy
// Always) listed in the opposite order in the status, labels, annotations
// and a start time.
func trainPod() *corev1.Pod {
	start := metav1.NewTime(podStart)
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "train-0", UID: "0b5c6d2e-1a2b-4c3d-8e4f-0123456789ab",
			Labels:        map[string]string{"app": "train", "team": "other"},
			Annotations:   map[string]string{"hami.io/vgpu-devices-allocated": "GPU-x,NVIDIA,1000,30:;"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			NodeName:       thisNode,
			InitContainers: []corev1.Container{{Name: "fetch"}, {Name: "proxy", RestartPolicy: &always}},
			Containers: []corev1.Container{{Name: "trainer", Resources: corev1.ResourceRequirements{
				// HAMi reads its limits, a request standing in for a name
				// without one; cpu and memory are not extended resources.
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpucores": resource.MustParse("30"),
					corev1.ResourceCPU: resource.MustParse("4")},
				Requests: corev1.ResourceList{"nvidia.com/gpumem": resource.MustParse("1000"), "nvidia.com/gpu": resource.MustParse("1"),
					corev1.ResourceMemory: resource.MustParse("1Gi")},
			}}, {Name: "logger"}},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &start,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "logger", ContainerID: "cri-o://" + ctrB},
				{Name: "trainer", ContainerID: "containerd://" + ctrA},
			},
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "proxy", ContainerID: "containerd://" + ctrSide},
				{Name: "fetch", ContainerID: "docker://" + ctrInit},
			},
		},
	}
}

func fixtures() []runtime.Object {
	return []runtime.Object{
		node(thisNode, map[string]string{"nvidia.com/gpu.replicas": "7"}),
		node("gpu-node-b", map[string]string{"nvidia.com/gpu.replicas": "2"}),
		namespace("team-a", map[string]string{"team": "search"}),
		namespace("team-b", nil),
		trainPod(),
		pod("team-b", "pending-0", "uid-p0", thisNode, corev1.PodPending), // not created yet: no ID
		pod("team-b", "done-0", "uid-d0", thisNode, corev1.PodSucceeded, corev1.ContainerStatus{Name: "main", ContainerID: "containerd://" + ctrB}),
		pod("team-b", "failed-0", "uid-f0", thisNode, corev1.PodFailed),
		pod("team-b", "elsewhere-0", "uid-e0", "gpu-node-b", corev1.PodRunning, corev1.ContainerStatus{Name: "main", ContainerID: "containerd://" + ctrB}),
	}
}

// wantInitial is fixtures() as this node's metadata, written by hand.
func wantInitial() attribution.Metadata {
	return attribution.Metadata{
		NodeLabels: map[string]string{"nvidia.com/gpu.replicas": "7"},
		Namespaces: map[string]map[string]string{"team-a": {"team": "search"}, "team-b": nil},
		Pods: []attribution.PodMeta{
			{
				UID: "0b5c6d2e-1a2b-4c3d-8e4f-0123456789ab", Namespace: "team-a", Name: "train-0",
				Labels:      map[string]string{"app": "train", "team": "other"},
				Annotations: map[string]string{"hami.io/vgpu-devices-allocated": "GPU-x,NVIDIA,1000,30:;"},
				StartTime:   podStart,
				Containers: []attribution.ContainerMeta{
					{Name: "trainer", ID: ctrA, LimitsKnown: true, Limits: map[string]string{
						"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "1000"}},
					{Name: "logger", ID: ctrB, LimitsKnown: true},
				},
				InitContainers: []attribution.ContainerMeta{
					{Name: "fetch", ID: ctrInit, LimitsKnown: true},
					{Name: "proxy", ID: ctrSide, Sidecar: true, LimitsKnown: true},
				},
			},
			{
				UID: "uid-p0", Namespace: "team-b", Name: "pending-0",
				Containers: []attribution.ContainerMeta{{Name: "main", LimitsKnown: true}},
			},
		},
	}
}

func newSource(t *testing.T, api *apiServer) *InformerSource {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := NewInformerSource(ctx, NodeWatches(api.client(), thisNode), thisNode, nil)
	if err != nil {
		t.Fatalf("NewInformerSource: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func snapshot(t *testing.T, s *InformerSource) attribution.Metadata {
	t.Helper()
	m, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return m
}

// eventually polls Snapshot until cond holds; informer events arrive
// asynchronously.
func eventually(t *testing.T, s *InformerSource, what string, cond func(attribution.Metadata) bool) attribution.Metadata {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := snapshot(t, s)
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed up; last snapshot %+v", what, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInformerSourceSnapshot(t *testing.T) {
	for _, wire := range []string{"protobuf", "json"} {
		t.Run(wire, func(t *testing.T) {
			api := newAPIServer(t, fixtures()...)
			if wire == "json" {
				api.answerJSONOnly()
			}
			s := newSource(t, api)

			got := snapshot(t, s)
			if want := wantInitial(); !reflect.DeepEqual(got, want) {
				t.Errorf("Snapshot =\n%+v\nwant\n%+v", got, want)
			}

			// The watches must be scoped to this node on the server side.
			want := map[string]string{"pods": "spec.nodeName=" + thisNode, "nodes": "metadata.name=" + thisNode, "namespaces": ""}
			seen := api.selectorsSeen()
			for res, sel := range want {
				if len(seen[res]) == 0 {
					t.Errorf("%s never requested", res)
				}
				for _, got := range seen[res] {
					if got != sel {
						t.Errorf("%s requested with field selector %q, want %q", res, got, sel)
					}
				}
			}

			// Events arrive in this wire format too.
			api.put(namespace("team-b", map[string]string{"team": "ranking"}))
			eventually(t, s, "the team-b label", func(m attribution.Metadata) bool {
				return m.Namespaces["team-b"]["team"] == "ranking"
			})
		})
	}
}

func TestInformerSourceCachesUntilEvent(t *testing.T) {
	api := newAPIServer(t, fixtures()...)
	s := newSource(t, api)

	first, second := snapshot(t, s), snapshot(t, s)
	if &first.Pods[0] != &second.Pods[0] {
		t.Error("Snapshot rebuilt without any informer event")
	}

	api.put(namespace("team-b", map[string]string{"team": "ranking"}))
	eventually(t, s, "the team-b label", func(m attribution.Metadata) bool {
		return m.Namespaces["team-b"]["team"] == "ranking"
	})
}

func TestInformerSourcePodDeletion(t *testing.T) {
	api := newAPIServer(t, fixtures()...)
	s := newSource(t, api)
	api.delete(trainPod())
	m := eventually(t, s, "deletion of train-0", func(m attribution.Metadata) bool {
		for _, p := range m.Pods {
			if p.Name == "train-0" {
				return false
			}
		}
		return true
	})
	if len(m.Pods) != 1 || m.Pods[0].Name != "pending-0" {
		t.Errorf("pods after deletion = %+v, want only pending-0", m.Pods)
	}
}

func TestInformerSourcePodUpdates(t *testing.T) {
	api := newAPIServer(t, fixtures()...)
	s := newSource(t, api)

	// pending-0 starts: its container gets an ID.
	api.put(pod("team-b", "pending-0", "uid-p0", thisNode, corev1.PodRunning, corev1.ContainerStatus{Name: "main", ContainerID: "containerd://" + ctrB}))
	eventually(t, s, "pending-0's container ID", func(m attribution.Metadata) bool {
		return len(m.Pods) == 2 && m.Pods[1].Containers[0].ID == ctrB
	})

	// train-0 completes and leaves the snapshot.
	done := trainPod()
	done.Status.Phase = corev1.PodSucceeded
	api.put(done)
	eventually(t, s, "train-0 finishing", func(m attribution.Metadata) bool {
		return len(m.Pods) == 1 && m.Pods[0].Name == "pending-0"
	})

	// A new pod lands on the node, another on a different node.
	api.put(pod("team-a", "new-0", "uid-n0", thisNode, corev1.PodRunning, corev1.ContainerStatus{Name: "main", ContainerID: "containerd://" + ctrA}))
	api.put(pod("team-a", "other-node-0", "uid-o0", "gpu-node-b", corev1.PodRunning, corev1.ContainerStatus{Name: "main", ContainerID: "containerd://" + ctrA}))
	eventually(t, s, "new-0", func(m attribution.Metadata) bool {
		return len(m.Pods) == 2 && m.Pods[0].Name == "new-0" && m.Pods[0].Containers[0].ID == ctrA
	})

	// The node is relabelled.
	api.put(node(thisNode, map[string]string{"nvidia.com/gpu.replicas": "4"}))
	eventually(t, s, "the node label", func(m attribution.Metadata) bool {
		return m.NodeLabels["nvidia.com/gpu.replicas"] == "4"
	})
	// Another node's pods never reach the cache: the server filtered them.
	if _, ok, _ := s.pods.GetByKey("team-a/other-node-0"); ok {
		t.Error("a pod of another node entered the cache")
	}
}

func TestInformerSourceSnapshotIsolatedFromCache(t *testing.T) {
	api := newAPIServer(t, fixtures()...)
	s := newSource(t, api)
	m := snapshot(t, s)
	m.Pods[0].Labels["team"] = "mutated"
	m.NodeLabels["x"] = "y"
	obj, ok, _ := s.pods.GetByKey("team-a/train-0")
	if !ok {
		t.Fatal("train-0 not in the cache")
	}
	p := obj.(*corev1.Pod)
	if p.Labels["team"] != "other" {
		t.Error("changing a snapshot changed the informer cache")
	}
	if len(p.ManagedFields) != 0 {
		t.Error("managed fields were kept in the cache")
	}
}

func TestNewInformerSourceErrors(t *testing.T) {
	t.Run("empty node name", func(t *testing.T) {
		api := newAPIServer(t)
		if _, err := NewInformerSource(context.Background(), NodeWatches(api.client(), ""), "", nil); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("missing watch", func(t *testing.T) {
		if _, err := NewInformerSource(context.Background(), Watches{}, thisNode, nil); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("node not found", func(t *testing.T) {
		api := newAPIServer(t, node("other", nil))
		_, err := NewInformerSource(context.Background(), NodeWatches(api.client(), thisNode), thisNode, nil)
		if err == nil || !strings.Contains(err.Error(), thisNode) {
			t.Errorf("error = %v, want one naming %s", err, thisNode)
		}
	})
	t.Run("API server refuses", func(t *testing.T) {
		api := newAPIServer(t, fixtures()...)
		api.forbid("pods")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := NewInformerSource(ctx, NodeWatches(api.client(), thisNode), thisNode, nil); err == nil {
			t.Error("want an error when the pod list never succeeds")
		}
	})
}

func TestNewClientErrors(t *testing.T) {
	if _, err := NewClient(&rest.Config{Host: "http://[::1"}); err == nil {
		t.Error("want an error for a malformed host")
	}
	if _, err := ClientFromKubeconfig(t.TempDir() + "/missing"); err == nil {
		t.Error("want an error for a missing kubeconfig")
	}
}
