package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/kubemeta"
	"github.com/gpuledger/gpuledger/internal/kubetest"
)

const (
	gpuNode   = "gpu-node-1"
	otherNode = "gpu-node-2"
)

// TestInformersAsServiceAccount runs the collector's metadata informers
// against the real API server, authenticated as the collector's
// ServiceAccount with the RBAC of the manifests, and checks the snapshot
// against what the admin created: this node's labels, every namespace's
// labels, this node's live pods with their container IDs, and nothing of
// the other node.
func TestInformersAsServiceAccount(t *testing.T) {
	c, _, collector := cluster(t)
	install(t)
	ctx := context.Background()
	admin := adminClient(t, c, corev1.SchemeGroupVersion)

	create := func(resource, ns string, obj runtime.Object) {
		t.Helper()
		req := admin.Post().Resource(resource).Body(obj)
		if ns != "" {
			req = req.Namespace(ns)
		}
		if err := req.Do(ctx).Error(); err != nil {
			t.Fatalf("create %s %s: %v", resource, name(obj), err)
		}
	}
	for _, n := range []*corev1.Node{
		node(gpuNode, map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4"}),
		node(otherNode, map[string]string{"nvidia.com/gpu.present": "true"}),
	} {
		create("nodes", "", n)
	}
	for ns, labels := range map[string]map[string]string{
		"team-ml":     {"team": "ml", "cost-center": "cc-17"},
		"team-vision": {"team": "vision"},
		"no-labels":   nil,
	} {
		create("namespaces", "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}})
		// No controller manager runs, so nothing creates the default
		// ServiceAccount that pod admission looks up.
		create("serviceaccounts", ns, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	}

	start := metav1.NewTime(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	pods := []struct {
		pod    *corev1.Pod
		status corev1.PodStatus
	}{
		{
			// An init container, a sidecar (restartable init container)
			// and two regular containers.
			pod: withSidecar(pod("team-ml", "trainer-0", gpuNode, map[string]string{"app": "trainer"}, []string{"setup"}, "trainer", "logger"), "proxy"),
			status: corev1.PodStatus{
				Phase: corev1.PodRunning, StartTime: &start,
				ContainerStatuses: []corev1.ContainerStatus{
					runningStatus("trainer", "containerd://"+strings.Repeat("a", 64), start),
					runningStatus("logger", "containerd://"+strings.Repeat("b", 64), start),
				},
				InitContainerStatuses: []corev1.ContainerStatus{
					terminatedStatus("setup", "containerd://"+strings.Repeat("c", 64), start),
					runningStatus("proxy", "containerd://"+strings.Repeat("f", 64), start),
				},
			},
		},
		{
			// Created but not started: no container ID yet.
			// Its HAMi limits travel through the API server's pod spec.
			pod: withLimits(pod("team-vision", "infer-0", gpuNode, nil, nil, "server"), "server",
				map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "10000"}),
			status: corev1.PodStatus{
				Phase: corev1.PodPending, StartTime: &start,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "example.invalid/img:1",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}},
			},
		},
		{
			// Finished pods hold no GPU.
			pod: pod("team-ml", "done-0", gpuNode, nil, nil, "job"),
			status: corev1.PodStatus{
				Phase: corev1.PodSucceeded, StartTime: &start,
				ContainerStatuses: []corev1.ContainerStatus{
					terminatedStatus("job", "containerd://"+strings.Repeat("d", 64), start),
				},
			},
		},
		{
			// Another node's pod is never sent to this node's collector.
			pod: pod("team-ml", "elsewhere-0", otherNode, nil, nil, "trainer"),
			status: corev1.PodStatus{
				Phase: corev1.PodRunning, StartTime: &start,
				ContainerStatuses: []corev1.ContainerStatus{
					runningStatus("trainer", "cri-o://"+strings.Repeat("e", 64), start),
				},
			},
		},
	}
	uids := map[string]string{}
	for _, p := range pods {
		var created corev1.Pod
		if err := admin.Post().Namespace(p.pod.Namespace).Resource("pods").Body(p.pod).Do(ctx).Into(&created); err != nil {
			t.Fatalf("create pod %s: %v", p.pod.Name, err)
		}
		// Status is its own subresource: a create ignores it, as it would
		// from a kubelet.
		created.Status = p.status
		if err := admin.Put().Namespace(created.Namespace).Resource("pods").Name(created.Name).SubResource("status").Body(&created).Do(ctx).Error(); err != nil {
			t.Fatalf("update status of pod %s: %v", created.Name, err)
		}
		uids[created.Name] = string(created.UID)
	}

	// DRA: this node's GPUs in one pool of two slices (a newer generation
	// replaced an older one, which lingers), and another node's slice.
	dra := adminClient(t, c, resourcev1.SchemeGroupVersion)
	createSlice := func(rs *resourcev1.ResourceSlice) {
		t.Helper()
		if err := dra.Post().Resource("resourceslices").Body(rs).Do(ctx).Error(); err != nil {
			t.Fatalf("create resourceslice %s: %v", rs.Name, err)
		}
	}
	createSlice(slice("gpu-node-1-gpus-old", gpuNode, "gpu.nvidia.com", gpuNode, 1, 1, gpuDevice("gpu-0", "GPU-0000", "old")))
	createSlice(slice("gpu-node-1-gpus-a", gpuNode, "gpu.nvidia.com", gpuNode, 2, 2, gpuDevice("gpu-0", "GPU-1111", "NVIDIA A100-SXM4-80GB")))
	createSlice(slice("gpu-node-1-gpus-b", gpuNode, "gpu.nvidia.com", gpuNode, 2, 2, gpuDevice("gpu-1", "GPU-2222", "NVIDIA A100-SXM4-80GB")))
	createSlice(slice("gpu-node-2-gpus", otherNode, "gpu.nvidia.com", otherNode, 1, 1, gpuDevice("gpu-0", "GPU-3333", "NVIDIA H100")))

	// The collector: the production clients and watches, as `gpuledger
	// collect` wires them, authenticated as the ServiceAccount (a static
	// token mapped to its user and groups).
	cfg, err := c.Config(collector)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubemeta.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resourceClient, err := kubemeta.NewResourceClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	watches := kubemeta.NodeWatches(client, gpuNode)
	watches.ResourceSlices = kubemeta.ResourceSliceWatch(resourceClient, gpuNode)
	src, err := kubemeta.NewInformerSource(ctx, watches, gpuNode, nil)
	if err != nil {
		t.Fatalf("NewInformerSource as %s: %v", collector.User, err)
	}
	t.Cleanup(src.Close)

	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4"}; !maps.Equal(snap.NodeLabels, want) {
		t.Errorf("node labels = %v, want %v", snap.NodeLabels, want)
	}
	for ns, want := range map[string]map[string]string{
		"team-ml":     {"team": "ml", "cost-center": "cc-17"},
		"team-vision": {"team": "vision"},
		"no-labels":   {},
	} {
		want["kubernetes.io/metadata.name"] = ns // the API server sets it on every namespace
		got, ok := snap.Namespaces[ns]
		if !ok {
			t.Errorf("namespace %s missing from the snapshot (has %v)", ns, slices.Sorted(maps.Keys(snap.Namespaces)))
		} else if !maps.Equal(got, want) {
			t.Errorf("namespace %s labels = %v, want %v", ns, got, want)
		}
	}
	for _, ns := range []string{"default", "kube-system"} {
		if _, ok := snap.Namespaces[ns]; !ok {
			t.Errorf("namespace %s missing from the snapshot", ns)
		}
	}

	wantPods := []attribution.PodMeta{
		{
			UID: uids["trainer-0"], Namespace: "team-ml", Name: "trainer-0", StartTime: start.UTC(),
			Labels: map[string]string{"app": "trainer"},
			Containers: []attribution.ContainerMeta{
				{Name: "trainer", ID: strings.Repeat("a", 64), LimitsKnown: true},
				{Name: "logger", ID: strings.Repeat("b", 64), LimitsKnown: true},
			},
			InitContainers: []attribution.ContainerMeta{
				{Name: "setup", ID: strings.Repeat("c", 64), LimitsKnown: true},
				{Name: "proxy", ID: strings.Repeat("f", 64), Sidecar: true, LimitsKnown: true},
			},
		},
		{
			UID: uids["infer-0"], Namespace: "team-vision", Name: "infer-0", StartTime: start.UTC(),
			Containers: []attribution.ContainerMeta{{Name: "server", LimitsKnown: true,
				Limits: map[string]string{"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30", "nvidia.com/gpumem": "10000"}}},
		},
	}
	if got := describePods(snap.Pods); got != describePods(wantPods) {
		t.Errorf("pods in the snapshot:\n%s\nwant:\n%s", got, describePods(wantPods))
	}

	wantDevices := []attribution.DRADevice{
		{Driver: "gpu.nvidia.com", Pool: gpuNode, Name: "gpu-0", Attributes: map[string]string{"uuid": "GPU-1111", "productName": "NVIDIA A100-SXM4-80GB", "type": "gpu", "minor": "0"}},
		{Driver: "gpu.nvidia.com", Pool: gpuNode, Name: "gpu-1", Attributes: map[string]string{"uuid": "GPU-2222", "productName": "NVIDIA A100-SXM4-80GB", "type": "gpu", "minor": "1"}},
	}
	if fmt.Sprint(snap.DRADevices) != fmt.Sprint(wantDevices) {
		t.Errorf("DRA devices:\n%v\nwant:\n%v", snap.DRADevices, wantDevices)
	}

	// Changes arrive through the watches: a new pod on this node, a
	// namespace relabelled, the other node's pod deleted (no event for us).
	create("pods", "team-vision", pod("team-vision", "infer-1", gpuNode, nil, nil, "server"))
	var ns corev1.Namespace
	if err := admin.Get().Resource("namespaces").Name("team-vision").Do(ctx).Into(&ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["team"] = "perception"
	if err := admin.Put().Resource("namespaces").Name("team-vision").Body(&ns).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	// A bound pod's deletion waits for its kubelet to stop it (the pod only
	// gets a deletionTimestamp, and the collector still sees it, rightly:
	// it may still hold the GPU); none runs here, so delete at once, as
	// the kubelet finally does.
	now := int64(0)
	if err := admin.Delete().Namespace("team-ml").Resource("pods").Name("trainer-0").Body(&metav1.DeleteOptions{GracePeriodSeconds: &now}).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	createSlice(slice("gpu-node-1-nics", gpuNode, "nic.example.com", gpuNode, 1, 1, resourcev1.Device{Name: "nic-0"}))
	snap = waitFor(t, src, "infer-1 added, trainer-0 deleted, team-vision relabelled, a NIC slice added", func(m attribution.Metadata) bool {
		var names []string
		for _, p := range m.Pods {
			names = append(names, p.Name)
		}
		return slices.Equal(names, []string{"infer-0", "infer-1"}) && m.Namespaces["team-vision"]["team"] == "perception" && len(m.DRADevices) == 3
	})
	if d := snap.DRADevices[2]; d.Driver != "nic.example.com" || d.Name != "nic-0" {
		t.Errorf("the new slice's device: %+v", d)
	}
	if snap.NodeLabels["nvidia.com/gpu.replicas"] != "4" {
		t.Errorf("node labels after the changes: %v", snap.NodeLabels)
	}
}

// waitFor polls the source's snapshot until ok holds (the watches deliver
// within milliseconds; the bound only stops a broken watch from hanging).
func waitFor(t *testing.T, src kubemeta.Source, what string, ok func(attribution.Metadata) bool) attribution.Metadata {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := src.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never showed %s; last:\n%s", what, describePods(m.Pods))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describePods prints pods one a line with every field the collector uses.
func describePods(pods []attribution.PodMeta) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s/%s uid=%s start=%s labels=%v annotations=%v containers=%+v init=%+v\n",
			p.Namespace, p.Name, p.UID, p.StartTime.Format(time.RFC3339), p.Labels, p.Annotations, p.Containers, p.InitContainers)
	}
	return b.String()
}

// adminClient is a REST client for one API group version as the admin.
func adminClient(t *testing.T, c *kubetest.Cluster, gv schema.GroupVersion) rest.Interface {
	t.Helper()
	cfg, err := c.Config(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(testScheme(t))
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func name(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetName()
	}
	return fmt.Sprintf("%T", obj)
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func pod(ns, name, nodeName string, labels map[string]string, initContainers []string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName},
	}
	for _, c := range initContainers {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c, Image: "example.invalid/img:1"})
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "example.invalid/img:1"})
	}
	return p
}

func runningStatus(name, id string, at metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: id, Image: "example.invalid/img:1", ImageID: "example.invalid/img@sha256:" + strings.Repeat("0", 64),
		Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}
}

func terminatedStatus(name, id string, at metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: id, Image: "example.invalid/img:1", ImageID: "example.invalid/img@sha256:" + strings.Repeat("0", 64),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: at, FinishedAt: at, ContainerID: id}}}
}

// testScheme holds the types the tests create.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := resourcev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// withSidecar adds a restartable init container (a sidecar) to p.
func withSidecar(p *corev1.Pod, name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "example.invalid/img:1", RestartPolicy: &always})
	return p
}

// slice is a ResourceSlice of one node's pool.
func slice(name, nodeName, driver, pool string, generation, count int64, devices ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourcev1.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: count},
			NodeName: &nodeName,
			Devices:  devices,
		},
	}
}

// gpuDevice is a GPU as NVIDIA's DRA driver publishes it: some attributes
// qualified with the driver's domain, some bare.
func gpuDevice(name, uuid, product string) resourcev1.Device {
	minor := int64(name[len(name)-1] - '0')
	str := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }
	return resourcev1.Device{
		Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"gpu.nvidia.com/uuid": str(uuid),
			"productName":         str(product),
			"type":                str("gpu"),
			"minor":               {IntValue: &minor},
		},
	}
}

// withLimits sets the resource limits of container name in p (extended
// resources such as HAMi's nvidia.com/gpucores are integers).
func withLimits(p *corev1.Pod, name string, limits map[string]string) *corev1.Pod {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name != name {
			continue
		}
		rl := corev1.ResourceList{}
		for k, v := range limits {
			rl[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		p.Spec.Containers[i].Resources.Limits = rl
	}
	return p
}
