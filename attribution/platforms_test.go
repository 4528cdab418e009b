package attribution

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// Real-cluster shapes per platform (docs/platforms.md). Expected numbers
// are worked out by hand in the comments from ledger.md's share table.

// podInit adds a pod with init containers (spec order) before its
// containers; a name ending in "+" is a sidecar (restartPolicy Always).
func (o *tobs) podInit(ns, name, uid string, ann map[string]string, inits []string, ctrs ...string) *tobs {
	o.pod(ns, name, uid, time.Time{}, nil, ann, ctrs...)
	p := &o.Metadata.Pods[len(o.Metadata.Pods)-1]
	for _, c := range inits {
		sidecar := len(c) > 0 && c[len(c)-1] == '+'
		if sidecar {
			c = c[:len(c)-1]
		}
		p.InitContainers = append(p.InitContainers, ContainerMeta{Name: c, ID: cid(uid, c), Sidecar: sidecar})
	}
	return o
}

func hamiAnn(v string) map[string]string { return map[string]string{HAMiAnnotation: v} }

// HAMi 2.9+ writes init containers' entries first; older HAMi only the
// regular containers'. An init container's processes are its own.
func TestHAMiInitContainersFirst(t *testing.T) {
	g1, g2 := gpuID(1), gpuID(2)
	o := newObs(at(0), at(10))
	o.wholeGPU(g1, rep(30, 10)...)
	o.wholeGPU(g2)
	// pa: init "warm" (20 cores) and sidecar "proxy" (none), then
	// "server" (50 cores): three entries, the middle one empty.
	o.podInit("a", "pa", uidA, hamiAnn(g1+",NVIDIA,1000,20:;;"+g1+",NVIDIA,2000,50:;"), []string{"warm", "proxy+"}, "server").
		alloc("a", "pa", "warm", "nvidia.com/gpu", g1+"-0").
		alloc("a", "pa", "server", "nvidia.com/gpu", g1+"-1").
		proc(1, g1, g1, 100, uidA, "warm", "python").samples(g1, 1, rep(30, 10)...)
	// pb: older HAMi, one entry for its one regular container.
	o.podInit("b", "pb", uidB, hamiAnn(g1+",NVIDIA,2000,30:;"), []string{"init"}, "main").
		alloc("b", "pb", "main", "nvidia.com/gpu", g1+"-2")
	// pc: two entries for two init and one container: neither form.
	o.podInit("c", "pc", uidC, hamiAnn(";"+g2+",NVIDIA,1,40:;"), []string{"i1", "i2"}, "main").
		alloc("c", "pc", "main", "nvidia.com/gpu", g2+"-0")
	res := attributeOnce(t, Config{}, o)
	gc := gpuOf(t, res, g1)
	// 0.2 + 0.5 + 0.3 = 1: nothing scaled, nothing unallocated. warm's
	// process: 30% of 10 s = 3 s, the device's whole busy time.
	wantRow(t, ctrOf(t, gc, "pa", "warm", g1+"-0"), string(tenancy.HAMi), MethodMeasured, 0.2, 2, 3)
	wantRow(t, ctrOf(t, gc, "pa", "server", g1+"-1"), string(tenancy.HAMi), MethodMeasured, 0.5, 5, 0)
	wantRow(t, ctrOf(t, gc, "pb", "main", g1+"-2"), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 0)
	wantResiduals(t, gc, 0, 0, 7)
	// pc falls back to kubelet's GPU: 1/N with N = 1 HAMi ID seen on g2.
	wantRow(t, ctrOf(t, gpuOf(t, res, g2), "pc", "main", g2+"-0"), string(tenancy.HAMi), MethodEstimated, 1, 10, 0)
	if !hasAnomaly(res, AnomalyBadAnnotation, "c/pc/main") || len(res.Anomalies) != 1 {
		t.Errorf("anomalies %+v, want one bad_annotation for c/pc/main", res.Anomalies)
	}
}

// HAMi's kubelet IDs may name other GPUs than the scheduler chose: the
// annotation is charged, on the GPUs it names.
func TestHAMiKubeletIDsNameOtherGPUs(t *testing.T) {
	g1, g2, g3 := gpuID(1), gpuID(2), gpuID(3)
	o := newObs(at(0), at(10))
	o.wholeGPU(g1).MemoryMiB = 80000
	o.wholeGPU(g2).MemoryMiB = 80000
	o.wholeGPU(g3)
	// Two devices (HAMi's multi-device form): 30 cores on g1, and on g2
	// no core limit and 20000 of 80000 MiB. Kubelet handed IDs of g3 and
	// g1.
	o.pod("a", "pa", uidA, time.Time{}, nil, hamiAnn(g1+",NVIDIA,1000,30:"+g2+",NVIDIA,20000,0:;"), "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g3+"-0", g1+"-5")
	res := attributeOnce(t, Config{}, o)
	// g1: the kubelet ID naming g1 is the slice.
	wantRow(t, ctrOf(t, gpuOf(t, res, g1), "pa", "c", g1+"-5"), string(tenancy.HAMi), MethodMeasured, 0.3, 3, 0)
	// g2: no kubelet ID names it, so the slice is its UUID; 0.25.
	wantRow(t, ctrOf(t, gpuOf(t, res, g2), "pa", "c", g2), string(tenancy.HAMi), MethodMeasured, 0.25, 2.5, 0)
	// g3: kubelet's ID alone charges nothing.
	g3c := gpuOf(t, res, g3)
	if len(g3c.Containers) != 0 {
		t.Errorf("rows on %s: %+v, want none", g3, g3c.Containers)
	}
	wantResiduals(t, g3c, 10, 0, 10)
	if len(res.Anomalies) != 0 {
		t.Errorf("anomalies %+v", res.Anomalies)
	}
}

// A container's processes on a GPU its annotation does not name: its own
// use, estimated, held at least as much there (the GPU is otherwise free),
// and an anomaly.
func TestHAMiUnlistedGPU(t *testing.T) {
	g1, g2 := gpuID(1), gpuID(2)
	o := newObs(at(0), at(10))
	o.wholeGPU(g1)
	o.wholeGPU(g2, rep(40, 10)...)
	o.pod("a", "pa", uidA, time.Time{}, nil, hamiAnn(g1+",NVIDIA,1000,50:;"), "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", g2+"-0").
		proc(1, g2, g2, 0, uidA, "c", "python").samples(g2, 1, rep(40, 10)...)
	res := attributeOnce(t, Config{}, o)
	wantRow(t, ctrOf(t, gpuOf(t, res, g1), "pa", "c", g1), string(tenancy.HAMi), MethodMeasured, 0.5, 5, 0)
	g2c := gpuOf(t, res, g2)
	// 40% of 10 s = 4 s used on g2, and so held there.
	wantRow(t, ctrOf(t, g2c, "pa", "c", g2), string(tenancy.HAMi), MethodEstimated, 0, 4, 4)
	wantResiduals(t, g2c, 6, 0, 6)
	if !hasAnomaly(res, AnomalyHAMiUnlistedGPU, "a/pa/c "+g2) {
		t.Errorf("anomalies %+v, want hami_unlisted_gpu", res.Anomalies)
	}
}

// The annotation value in force is the first one seen while the container
// runs; edits move nothing, are reported once per value, and a restarted
// engine charges by the restored pin.
func TestHAMiAnnotationPinned(t *testing.T) {
	g := gpuID(1)
	v1, v2 := g+",NVIDIA,1000,25:;", g+",NVIDIA,1000,1:;"
	cycle := func(from, to float64, ann string) Observation {
		o := newObs(at(from), at(to))
		o.wholeGPU(g)
		o.pod("a", "pa", uidA, time.Time{}, nil, hamiAnn(ann), "c").
			alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0")
		return o.Observation
	}
	e := NewEngine(Config{})
	res := e.Observe(cycle(0, 0, v1))
	want := AnnotationPin{PodUID: uidA, Container: "c", Key: HAMiAnnotation, Value: v1, At: at(0)}
	if len(res.NewPins) != 1 || res.NewPins[0] != want {
		t.Fatalf("NewPins %+v, want [%+v]", res.NewPins, want)
	}
	for i, tc := range []struct {
		from, to float64
		ann      string
		report   bool
	}{
		{0, 10, v2, true},   // the tenant edits: still 25 cores
		{10, 20, v2, false}, // reported once per change
		{20, 30, v1, false}, // back to the pinned value: nothing to say
		{30, 40, "garbage", true},
	} {
		res = e.Observe(cycle(tc.from, tc.to, tc.ann))
		checkCycle(t, res)
		wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", g+"-0"), string(tenancy.HAMi), MethodMeasured, 0.25, 2.5, 0)
		// The key names the container and the annotation, never the
		// tenant-written value (which the detail quotes).
		if got := hasAnomaly(res, AnomalyAnnotationChanged, "a/pa/c "+HAMiAnnotation); got != tc.report || len(res.NewPins) != 0 {
			t.Errorf("cycle %d: annotation_changed %v, want %v; NewPins %+v; anomalies %+v", i, got, tc.report, res.NewPins, res.Anomalies)
		}
	}

	// A restarted collector: the restored pin wins over the edited value.
	e = NewEngine(Config{})
	e.RestorePins([]AnnotationPin{want})
	e.Observe(cycle(0, 0, v2))
	res = e.Observe(cycle(0, 10, v2))
	checkCycle(t, res)
	wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", g+"-0"), string(tenancy.HAMi), MethodMeasured, 0.25, 2.5, 0)
	if len(res.NewPins) != 0 {
		t.Errorf("NewPins %+v after a restore", res.NewPins)
	}

	// A failed metadata source keeps pins; a departed pod drops them.
	gone := cycle(10, 20, v2)
	gone.Metadata.Pods, gone.Allocations = nil, nil
	gone.Degraded = map[string]bool{"kubemeta": true}
	e.Observe(gone)
	if len(e.pins) != 1 {
		t.Errorf("pins %v after a degraded cycle, want the one kept", e.pins)
	}
	gone.Prev, gone.Time, gone.Degraded = at(20), at(30), nil
	e.Observe(gone)
	if len(e.pins) != 0 {
		t.Errorf("pins %v after the pod left, want none", e.pins)
	}
}

// NVIDIA's device plugin: replicas labels are named after the resource's
// original name (renameByDefault appends ".shared" to the resource, not to
// the label: README "nvidia.com/<resource-name>.replicas", and GPU feature
// discovery's mixed-strategy labels nvidia.com/mig-<profile>.replicas in
// tests/expected-output-mig-mixed.txt); the whole-GPU label never counts
// MIG resources' replicas.
func TestReplicasLabels(t *testing.T) {
	g, mg := gpuID(1), gpuID(2)
	m1, m2 := migID(11), migID(12)
	tests := []struct {
		name     string
		labels   map[string]string
		resource string
		ids      []string
		mode     string
		method   string
		share    float64
	}{
		{"mixed renamed", map[string]string{"nvidia.com/mig-1g.10gb.replicas": "4", LabelReplicas: "2"},
			"nvidia.com/mig-1g.10gb.shared", []string{m1 + "::0"}, string(tenancy.MIGTimeslicing), MethodMeasured, 1.0 / 7 / 4},
		{"mixed", map[string]string{"nvidia.com/mig-1g.10gb.replicas": "3"},
			"nvidia.com/mig-1g.10gb", []string{m1 + "::0"}, string(tenancy.MIGTimeslicing), MethodMeasured, 1.0 / 7 / 3},
		// Only the whole-GPU label: not for MIG; 3 distinct IDs seen.
		{"mixed without its label", map[string]string{LabelReplicas: "2"},
			"nvidia.com/mig-1g.10gb", []string{m1 + "::0", m1 + "::1", m1 + "::2"}, string(tenancy.MIGTimeslicing), MethodEstimated, 1.0 / 7 / 3},
		{"mixed renamed without its label", map[string]string{LabelReplicas: "2"},
			"nvidia.com/mig-1g.10gb.shared", []string{m1 + "::5"}, string(tenancy.MIGTimeslicing), MethodEstimated, 1.0 / 7},
		// Single strategy: MIG IDs under nvidia.com/gpu take the GPU label.
		{"single", map[string]string{LabelReplicas: "2"},
			"nvidia.com/gpu", []string{m2 + "::1"}, string(tenancy.MIGTimeslicing), MethodMeasured, 2.0 / 7 / 2},
		{"whole renamed", map[string]string{LabelReplicas: "4"},
			"nvidia.com/gpu.shared", []string{g + "::3"}, string(tenancy.Timeslicing), MethodMeasured, 0.25},
		{"whole without label", map[string]string{},
			"nvidia.com/gpu.shared", []string{g + "::3", g + "::7"}, string(tenancy.Timeslicing), MethodEstimated, 0.5},
	}
	for _, tt := range tests {
		o := newObs(at(0), at(7)).label(LabelSharingStrategy, "time-slicing")
		for k, v := range tt.labels {
			o.label(k, v)
		}
		o.wholeGPU(g)
		o.migGPU(mg, 11, []int{1, 2}, []float64{0, 0})
		o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").alloc("a", "pa", "c", tt.resource, tt.ids[0])
		if len(tt.ids) > 1 {
			o.pod("b", "pb", uidB, time.Time{}, nil, nil, "c").alloc("b", "pb", "c", tt.resource, tt.ids[1:]...)
		}
		res := attributeOnce(t, Config{}, o)
		gu := g
		if tt.ids[0][:4] == "MIG-" {
			gu = mg
		}
		c := ctrOf(t, gpuOf(t, res, gu), "pa", "c", tt.ids[0])
		if c.SharingMode != tt.mode || c.Method != tt.method || !near(c.Share, tt.share) {
			t.Errorf("%s: %s %s share %v, want %s %s %v", tt.name, c.SharingMode, c.Method, c.Share, tt.mode, tt.method, tt.share)
		}
	}
}

// NVIDIA's DRA driver (NVIDIA/k8s-dra-driver-gpu): devices "gpu-<minor>"
// and "gpu-<minor>-mig-<profile>-<profileID>-<placement>" with a uuid
// attribute (cmd/gpu-kubelet-plugin/deviceinfo.go, mig.go).
func TestDRAClaims(t *testing.T) {
	g1, g2 := gpuID(1), gpuID(2)
	m1, m2 := migID(21), migID(22)
	o := newObs(at(0), at(7))
	o.wholeGPU(g1, rep(50, 7)...)
	o.migGPU(g2, 21, []int{3, 2}, []float64{0, 0.5})
	o.Metadata.DRADevices = []DRADevice{
		{Driver: "gpu.nvidia.com", Pool: "node-a", Name: "gpu-0", Attributes: map[string]string{"type": "gpu", "uuid": g1}},
		{Driver: "gpu.nvidia.com", Pool: "node-a", Name: "gpu-1-mig-3g40gb-9-0", Attributes: map[string]string{"type": "mig", "uuid": m1, "parentUUID": g2}},
		{Driver: "gpu.nvidia.com", Pool: "node-a", Name: "gpu-1-mig-2g20gb-14-4", Attributes: map[string]string{"type": "mig", "uuid": m2, "parentUUID": g2}},
		{Driver: "gpu.nvidia.com", Pool: "node-a", Name: "gpu-2", Attributes: map[string]string{"type": "gpu"}},
		{Driver: "gpu.nvidia.com", Pool: "node-a", Name: "gpu-3", Attributes: map[string]string{"type": "gpu", "uuid": gpuID(99)}},
	}
	claim := func(ns, name, driver, device string) ClaimDevice {
		return ClaimDevice{ClaimNamespace: ns, ClaimName: name, Driver: driver, Pool: "node-a", Device: device}
	}
	shared := claim("a", "shared-gpu", "gpu.nvidia.com", "gpu-0")
	sharedMIG := claim("c", "shared-mig", "gpu.nvidia.com", "gpu-1-mig-2g20gb-14-4")
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		pod("c", "pc", uidC, time.Time{}, nil, nil, "c", "d").
		pod("d", "pd", "dddddddd-0000-4000-8000-00000000000d", time.Time{}, nil, nil, "c")
	o.Allocations = append(o.Allocations,
		Allocation{Namespace: "a", Pod: "pa", Container: "c", Claims: []ClaimDevice{shared}},
		Allocation{Namespace: "b", Pod: "pb", Container: "c", Claims: []ClaimDevice{shared}},
		Allocation{Namespace: "c", Pod: "pc", Container: "c", Claims: []ClaimDevice{
			claim("c", "mig", "gpu.nvidia.com", "gpu-1-mig-3g40gb-9-0"), sharedMIG}},
		Allocation{Namespace: "c", Pod: "pc", Container: "d", Claims: []ClaimDevice{sharedMIG}},
		Allocation{Namespace: "d", Pod: "pd", Container: "c", Claims: []ClaimDevice{
			claim("d", "no-uuid", "gpu.nvidia.com", "gpu-2"),
			claim("d", "elsewhere", "gpu.nvidia.com", "gpu-3"),
			claim("d", "stale", "gpu.nvidia.com", "gpu-9"),
			claim("d", "nic", "net.example.com", "eth1")}})
	o.proc(1, g1, g1, 0, uidA, "c", "x").samples(g1, 1, rep(30, 7)...).
		proc(2, g1, g1, 0, uidB, "c", "x").samples(g1, 2, rep(20, 7)...).
		proc(3, g2, m2, 0, uidC, "c", "x")
	res := attributeOnce(t, Config{}, o)
	// g1 shared by two pods: 1/2 each, usage per process: 30% and 20%
	// of 7 s, measured.
	gc1 := gpuOf(t, res, g1)
	wantRow(t, ctrOf(t, gc1, "pa", "c", g1), string(tenancy.DRA), MethodMeasured, 0.5, 3.5, 2.1)
	wantRow(t, ctrOf(t, gc1, "pb", "c", g1), string(tenancy.DRA), MethodMeasured, 0.5, 3.5, 1.4)
	wantResiduals(t, gc1, 0, 0, 3.5)
	// m1 (3/7) held by pc/c alone: 3 s, measured, idle. m2 (2/7) shared
	// by pc/c and pc/d: 1/7 each; busy 2/7 x 0.5 x 7 = 1 s all to c, the
	// only holder running there, an estimate (as for any MIG instance
	// with several holders).
	gc2 := gpuOf(t, res, g2)
	wantRow(t, ctrOf(t, gc2, "pc", "c", m1), string(tenancy.DRA), MethodMeasured, 3.0/7, 3, 0)
	wantRow(t, ctrOf(t, gc2, "pc", "c", m2), string(tenancy.DRA), MethodEstimated, 1.0/7, 1, 1)
	wantRow(t, ctrOf(t, gc2, "pc", "d", m2), string(tenancy.DRA), MethodEstimated, 1.0/7, 1, 0)
	wantResiduals(t, gc2, 2, 0, 6)
	for _, k := range [][2]string{
		{AnomalyUnmappedClaim, "gpu.nvidia.com/node-a/gpu-2"},
		{AnomalyUnmappedClaim, "gpu.nvidia.com/node-a/gpu-3"},
		{AnomalyUnmappedClaim, "gpu.nvidia.com/node-a/gpu-9"},
		{AnomalyNonGPUClaim, "d/nic net.example.com"},
	} {
		if !hasAnomaly(res, k[0], k[1]) {
			t.Errorf("no %s anomaly %q in %+v", k[0], k[1], res.Anomalies)
		}
	}
	if len(res.Anomalies) != 4 {
		t.Errorf("anomalies %+v, want exactly the four", res.Anomalies)
	}

	// Another driver declared a GPU driver is charged like NVIDIA's. Its
	// device is another DRA device than gpu-0 (holders are counted per
	// driver/pool/device), so pd gets 1 to pa's and pb's 1/2: 2 in all,
	// scaled down to 1/2, 1/4, 1/4.
	o.Metadata.DRADevices = append(o.Metadata.DRADevices, DRADevice{Driver: "net.example.com", Pool: "node-a", Name: "eth1",
		Attributes: map[string]string{"uuid": g1}})
	res = attributeOnce(t, Config{DRAGPUDrivers: []string{"gpu.nvidia.com", "net.example.com"}}, o)
	gc1 = gpuOf(t, res, g1)
	wantRow(t, ctrOf(t, gc1, "pd", "c", g1), string(tenancy.DRA), MethodMeasured, 0.5, 3.5, 0)
	wantRow(t, ctrOf(t, gc1, "pa", "c", g1), string(tenancy.DRA), MethodMeasured, 0.25, 1.75, 2.1)
}

// GKE's device plugin names GPUs by NVML minor number, which need not be
// the index.
func TestGKEDeviceIDs(t *testing.T) {
	g0, g1, mg := gpuID(1), gpuID(2), gpuID(3)
	o := newObs(at(0), at(7)).label(LabelGKESharingStrategy, "time-sharing").label(LabelGKEMaxClients, "4")
	gp := o.wholeGPU(g0)
	gp.Index, gp.Minor, gp.HasMinor = 0, 2, true
	gp = o.wholeGPU(g1)
	gp.Index, gp.Minor, gp.HasMinor = 1, 0, true
	gp = o.migGPU(mg, 31, []int{2, 1}, []float64{0, 0})
	gp.Index, gp.Minor, gp.HasMinor = 2, 5, true
	gp.MIG[0].GPUInstanceID, gp.MIG[1].GPUInstanceID = 3, 9
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		pod("c", "pc", uidC, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", "nvidia2/vgpu0", "nvidia0/vgpu1").
		alloc("b", "pb", "c", "nvidia.com/gpu", "nvidia5/gi3/vgpu0", "nvidia5/gi9").
		alloc("c", "pc", "c", "nvidia.com/gpu", "nvidia7", "nvidia5/gi4", "nvidia00")
	res := attributeOnce(t, Config{}, o)
	// nvidia2 is index 0, nvidia0 index 1: 1/4 each, time-sharing.
	wantRow(t, ctrOf(t, gpuOf(t, res, g0), "pa", "c", "nvidia2/vgpu0"), string(tenancy.Timeslicing), MethodMeasured, 0.25, 1.75, 0)
	wantRow(t, ctrOf(t, gpuOf(t, res, g1), "pa", "c", "nvidia0/vgpu1"), string(tenancy.Timeslicing), MethodMeasured, 0.25, 1.75, 0)
	// gi3 is the 2-slice instance: (2/7)/4; gi9 the 1-slice one, whole.
	mgc := gpuOf(t, res, mg)
	wantRow(t, ctrOf(t, mgc, "pb", "c", "nvidia5/gi3/vgpu0"), string(tenancy.MIGTimeslicing), MethodMeasured, 2.0/7/4, 0.5, 0)
	wantRow(t, ctrOf(t, mgc, "pb", "c", "nvidia5/gi9"), string(tenancy.MIG), MethodMeasured, 1.0/7, 1, 0)
	wantResiduals(t, mgc, 5.5, 0, 7)
	if !hasAnomaly(res, AnomalyUnknownDevice, "nvidia7") || !hasAnomaly(res, AnomalyUnknownDevice, "nvidia5/gi4") ||
		!hasAnomaly(res, AnomalyBadDeviceID, "nvidia00") || len(res.Anomalies) != 3 {
		t.Errorf("anomalies %+v, want unknown nvidia7 and nvidia5/gi4, bad nvidia00", res.Anomalies)
	}
}

func TestGKEWithoutClientsLabel(t *testing.T) {
	g := gpuID(1)
	o := newObs(at(0), at(10)).label(LabelGKESharingStrategy, "mps")
	gp := o.wholeGPU(g)
	gp.HasMinor = true // minor 0
	o.pod("a", "pa", uidA, time.Time{}, nil, nil, "c").
		pod("b", "pb", uidB, time.Time{}, nil, nil, "c").
		alloc("a", "pa", "c", "nvidia.com/gpu", "nvidia0/vgpu0").
		alloc("b", "pb", "c", "nvidia.com/gpu", "nvidia0/vgpu3")
	gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
	// Two distinct vgpu IDs seen: 1/2 each, an estimate; MPS.
	wantRow(t, ctrOf(t, gc, "pa", "c", ""), string(tenancy.MPS), MethodEstimated, 0.5, 5, 0)
	wantRow(t, ctrOf(t, gc, "pb", "c", ""), string(tenancy.MPS), MethodEstimated, 0.5, 5, 0)
	// Without HasMinor no GPU answers to a minor number.
	o.GPUs[0].HasMinor = false
	res := attributeOnce(t, Config{}, o)
	if !hasAnomaly(res, AnomalyUnknownDevice, "nvidia0/vgpu0") || len(gpuOf(t, res, g).Containers) != 0 {
		t.Errorf("without a minor: %+v", res)
	}
}

func TestPositiveInt(t *testing.T) {
	for in, want := range map[string]int{
		"4": 4, " 12 ": 12, "04": 4, "": 0, "0": 0, "-1": 0, "+4": 0, "x": 0, "1e3": 0, "4 gpus": 0, "9999999999": 0,
	} {
		if got := positiveInt(in); got != want {
			t.Errorf("positiveInt(%q) = %d, want %d", in, got, want)
		}
	}
	// Read every cycle for labels most nodes lack: it must not allocate.
	if n := testing.AllocsPerRun(10, func() { positiveInt(""); positiveInt("x") }); n != 0 {
		t.Errorf("positiveInt allocates %v times", n)
	}
}

// FuzzPositiveInt: node labels are outside input. The result is the
// label's decimal value where it is a small positive number (what strconv
// says about the trimmed text, without a sign), else 0.
func FuzzPositiveInt(f *testing.F) {
	for _, s := range []string{"4", " 12 ", "0", "-1", "+4", "", "x", "999999999", "1000000000", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := positiveInt(s)
		trimmed := strings.TrimSpace(s)
		want := 0
		if n, err := strconv.Atoi(trimmed); err == nil && n > 0 && n < 1e9 && trimmed[0] != '+' {
			want = n
		}
		if got != want {
			t.Fatalf("positiveInt(%q) = %d, want %d", s, got, want)
		}
	})
}

// An edit between the pod's first listing and its container's start is
// the tenant's doing too: the container is charged by the value in force
// when it starts (the scenario format's rule), and the edit is reported.
func TestHAMiEditBeforeTheContainerStartsIsReported(t *testing.T) {
	g := gpuID(1)
	v1, v2 := g+",NVIDIA,1000,100:;", g+",NVIDIA,1000,1:;"
	e := NewEngine(Config{})
	// Two cycles with the pod bound and its container not started yet.
	for _, w := range [][2]float64{{0, 0}, {0, 10}} {
		o := newObs(at(w[0]), at(w[1]))
		o.wholeGPU(g)
		o.pod("a", "pa", uidA, time.Time{}, nil, hamiAnn(v1), "c")
		if res := e.Observe(o.Observation); len(res.NewPins) != 0 {
			t.Fatalf("pinned %+v before the container started", res.NewPins)
		}
	}
	// Edited to 1 core, then the container starts.
	o := newObs(at(10), at(20))
	o.wholeGPU(g)
	o.pod("a", "pa", uidA, time.Time{}, nil, hamiAnn(v2), "c").alloc("a", "pa", "c", "nvidia.com/gpu", g+"-0")
	res := e.Observe(o.Observation)
	checkCycle(t, res)
	// 1 core of 100: 0.01 x 10 s, as the rule says.
	wantRow(t, ctrOf(t, gpuOf(t, res, g), "pa", "c", g+"-0"), string(tenancy.HAMi), MethodMeasured, 0.01, 0.1, 0)
	if len(res.NewPins) != 1 || res.NewPins[0].Value != v2 {
		t.Errorf("NewPins %+v, want the value at the container's start", res.NewPins)
	}
	if !hasAnomaly(res, AnomalyAnnotationChanged, "a/pa/c "+HAMiAnnotation) {
		t.Errorf("anomalies %+v, want annotation_changed for the edit before the start", res.Anomalies)
	}
}
