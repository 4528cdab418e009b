package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/dcgmsource"
	"github.com/gpuledger/gpuledger/collector/nvmlsource"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// The shapes scenario uses every "shapes of real clusters" field; the
// expected values below are read off that file by hand, and derived
// container IDs come from Python's hashlib.
const shapesPath = "scenario/testdata/shapes/scenario.yaml"

const (
	shapesGPU0  = "GPU-5a000000-0000-4000-8000-000000000000"
	shapesMIGb2 = "MIG-5a000000-0000-4000-8000-0000000000b2"
	shapesMIGb7 = "MIG-5a000000-0000-4000-8000-0000000000b7"
	shapesMIGb0 = "MIG-5a000000-0000-4000-8000-0000000000b0"

	fetchWeightsID = "7eb88019f7483eea2468a02ef7bf91f27e6f86a81cc7b339a8fc1764b926fa1b"
	proxyID        = "7e7f296438470d6567b1ff9e40292eec5b24dc82fcf5e4253b094a647f80e413"
	warmupID       = "2a169ed0ae3089eecd44019a1afc2d8a5a4e6af61d52553ebe4f119bd0961eb2"
	serverID       = "7a2d2debea4270c68f753d21d67e28a7abecc4287494d29175c3982ba610ed03"
)

func shapesNode(t *testing.T) (*Node, *scenario.Scenario) {
	t.Helper()
	sc, err := scenario.Load(shapesPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return newNode(t, sc), sc
}

// advanceShapes moves the shapes node (which starts on 2026-11-03) to an
// offset.
func advanceShapes(t *testing.T, n *Node, sc *scenario.Scenario, off time.Duration) {
	t.Helper()
	if err := n.Advance(sc.Start.Add(off)); err != nil {
		t.Fatalf("Advance(%v): %v", off, err)
	}
}

// describe renders one pod's listing as "container devices claims" lines,
// the form the expectations below are written in.
func describe(pr *podresourcesv1.PodResources) []string {
	var out []string
	for _, c := range pr.GetContainers() {
		var parts []string
		for _, d := range c.GetDevices() {
			parts = append(parts, d.GetResourceName()+"="+strings.Join(d.GetDeviceIds(), ","))
		}
		for _, dr := range c.GetDynamicResources() {
			var devs []string
			for _, cr := range dr.GetClaimResources() {
				devs = append(devs, cr.GetDriverName()+"/"+cr.GetPoolName()+"/"+cr.GetDeviceName())
			}
			parts = append(parts, fmt.Sprintf("claim %s/%s=%s", dr.GetClaimNamespace(), dr.GetClaimName(), strings.Join(devs, ",")))
		}
		out = append(out, strings.TrimSpace(c.GetName()+" "+strings.Join(parts, " ")))
	}
	return out
}

func TestPodResourcesListsInitContainersAndClaims(t *testing.T) {
	n, sc := shapesNode(t)
	conn, err := grpc.NewClient("unix://"+n.PodResourcesSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer conn.Close()
	client := podresourcesv1.NewPodResourcesListerClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := func() map[string][]string {
		t.Helper()
		resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		out := map[string][]string{}
		for _, p := range resp.GetPodResources() {
			out[p.GetName()] = describe(p)
		}
		return out
	}

	const (
		gpuClaim = "claim team-a/gpu-claim=gpu.nvidia.com/sim-node-shapes/gpu-0"
		shared   = "claim team-a/shared-gpu=gpu.nvidia.com/sim-node-shapes/gpu-0,gpu.nvidia.com/sim-node-shapes/gpu-1-mig-gi7"
		trainer  = "trainer nvidia.com/gpu=nvidia0/gi2"
		sharer   = "sharer nvidia.com/gpu=nvidia0/gi0/vgpu1,nvidia3/vgpu0"
		model    = "model nvidia.com/gpu=GPU-5a000000-0000-4000-8000-000000000002-0"
	)
	// gke-mig's plain init container setup runs [0s,5s]; its containers
	// start when it ends, at 5s (both ends inclusive).
	const setup = "setup nvidia.com/gpu=nvidia0/gi2"
	others := func(gke ...string) map[string][]string {
		return map[string][]string{
			"dra-shared": {"worker " + shared},
			"gke-mig":    gke,
			"hami-edit":  {model},
		}
	}
	with := func(m map[string][]string, infer ...string) map[string][]string {
		m["dra-infer"] = infer
		return m
	}
	steps := []struct {
		at   time.Duration
		want map[string][]string
	}{
		// dra-infer is not yet alive; setup runs [0s,5s].
		{0, others(setup)},
		{5 * time.Second, others(setup, trainer, sharer)},
		{6 * time.Second, others(trainer, sharer)},
		// fetch-weights runs [10s,40s] and holds gpu-0 through the claim
		// dra-shared's worker also holds; the server starts only when the
		// last plain init container (warmup) ends, at 1m.
		{10 * time.Second, with(others(trainer, sharer), "fetch-weights "+gpuClaim)},
		// At 40s fetch-weights is still listed (ends are inclusive), the
		// sidecar and warmup have started.
		{40 * time.Second, with(others(trainer, sharer), "fetch-weights "+gpuClaim, "proxy", "warmup")},
		{41 * time.Second, with(others(trainer, sharer), "proxy", "warmup")},
		{time.Minute, with(others(trainer, sharer), "proxy", "warmup", "server "+gpuClaim)},
		{61 * time.Second, with(others(trainer, sharer), "proxy", "server "+gpuClaim)},
		{9 * time.Minute, with(others(trainer, sharer), "proxy", "server "+gpuClaim)},
		{9*time.Minute + time.Second, others(trainer, sharer)},
	}
	for _, s := range steps {
		advanceShapes(t, n, sc, s.at)
		if got := list(); !reflect.DeepEqual(got, s.want) {
			t.Errorf("at %v: listed\n%q\nwant\n%q", s.at, got, s.want)
		}
	}
}

func TestPodResourcesGetListsInitContainers(t *testing.T) {
	n, sc := shapesNode(t)
	conn, err := grpc.NewClient("unix://"+n.PodResourcesSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer conn.Close()
	client := podresourcesv1.NewPodResourcesListerClient(conn)
	advanceShapes(t, n, sc, 20*time.Second)
	resp, err := client.Get(context.Background(), &podresourcesv1.GetPodResourcesRequest{PodName: "dra-infer", PodNamespace: "team-a"})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	// The server has not started yet at 20s (it starts at 1m).
	want := []string{
		"fetch-weights claim team-a/gpu-claim=gpu.nvidia.com/sim-node-shapes/gpu-0",
	}
	if got := describe(resp.GetPodResources()); !slices.Equal(got, want) {
		t.Errorf("Get dra-infer at 20s = %q, want %q", got, want)
	}
	alloc, err := client.GetAllocatableResources(context.Background(), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatalf("GetAllocatableResources: %v", err)
	}
	// setup's nvidia0/gi2 is trainer's too: listed once.
	wantIDs := []string{"GPU-5a000000-0000-4000-8000-000000000002-0", "nvidia0/gi0/vgpu1", "nvidia0/gi2", "nvidia3/vgpu0"}
	if d := alloc.GetDevices(); len(d) != 1 || !slices.Equal(d[0].GetDeviceIds(), wantIDs) {
		t.Errorf("allocatable %v, want nvidia.com/gpu %v", d, wantIDs)
	}
}

func snapshotPod(t *testing.T, n *Node, name string) (attribution.PodMeta, attribution.Metadata) {
	t.Helper()
	md, err := n.Metadata().Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	for _, p := range md.Pods {
		if p.Name == name {
			return p, md
		}
	}
	t.Fatalf("pod %s not in the snapshot", name)
	return attribution.PodMeta{}, md
}

func TestMetadataAnnotationChangesFromTheirOffset(t *testing.T) {
	n, sc := shapesNode(t)
	const (
		key    = "hami.io/vgpu-devices-allocated"
		before = "GPU-5a000000-0000-4000-8000-000000000002,NVIDIA,10000,30:;"
		after  = "GPU-5a000000-0000-4000-8000-000000000002,NVIDIA,10000,90:;"
	)
	wantBefore := map[string]string{key: before, "hami.io/vgpu-node": "sim-node-shapes"}
	wantAfter := map[string]string{key: after, "hami.io/vgpu-node": "sim-node-shapes", "example.com/edited-by": "tenant"}
	steps := []struct {
		at   time.Duration
		want map[string]string
	}{
		{0, wantBefore},
		{5*time.Minute - time.Millisecond, wantBefore},
		{5 * time.Minute, wantAfter},
		{10 * time.Minute, wantAfter},
	}
	for _, s := range steps {
		advanceShapes(t, n, sc, s.at)
		if p, _ := snapshotPod(t, n, "hami-edit"); !maps.Equal(p.Annotations, s.want) {
			t.Errorf("at %v: annotations %v, want %v", s.at, p.Annotations, s.want)
		}
	}
}

func TestMetadataInitContainersAndDRADevices(t *testing.T) {
	n, sc := shapesNode(t)
	advanceShapes(t, n, sc, 10*time.Second)
	p, md := snapshotPod(t, n, "dra-infer")
	wantInit := []attribution.ContainerMeta{
		{Name: "fetch-weights", ID: fetchWeightsID},
		{Name: "proxy", ID: proxyID, Sidecar: true},
		{Name: "warmup", ID: warmupID},
	}
	if !reflect.DeepEqual(p.InitContainers, wantInit) {
		t.Errorf("init containers %+v, want %+v", p.InitContainers, wantInit)
	}
	if want := []attribution.ContainerMeta{{Name: "server", ID: serverID}}; !reflect.DeepEqual(p.Containers, want) {
		t.Errorf("containers %+v, want %+v", p.Containers, want)
	}
	wantDRA := []attribution.DRADevice{
		{Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Name: "gpu-0", Attributes: map[string]string{
			"type": "gpu", "uuid": shapesGPU0, "index": "0", "productName": "NVIDIA A100-SXM4-80GB",
		}},
		{Driver: "gpu.nvidia.com", Pool: "sim-node-shapes", Name: "gpu-1-mig-gi7", Attributes: map[string]string{
			"type": "mig", "uuid": shapesMIGb7, "parentUUID": "GPU-5a000000-0000-4000-8000-000000000001",
			"profile": "1g.10gb", "migCapable": "true", "memorySlices": "1",
		}},
		{Driver: "dra.example.com", Pool: "other", Name: "nic-0", Attributes: map[string]string{}},
	}
	if !reflect.DeepEqual(md.DRADevices, wantDRA) {
		t.Errorf("DRA devices\n%+v\nwant\n%+v", md.DRADevices, wantDRA)
	}
}

func TestUnqualifiedAttributes(t *testing.T) {
	cases := []struct {
		in, want map[string]string
	}{
		{map[string]string{"gpu.nvidia.com/uuid": "a", "type": "gpu"}, map[string]string{"uuid": "a", "type": "gpu"}},
		// The driver's own attribute wins over another domain's, whether
		// written plain or qualified, whichever sorts first.
		{map[string]string{"uuid": "own", "other.io/uuid": "foreign"}, map[string]string{"uuid": "own"}},
		{map[string]string{"gpu.nvidia.com/uuid": "own", "other.io/uuid": "foreign"}, map[string]string{"uuid": "own"}},
		{map[string]string{"a.io/uuid": "foreign", "gpu.nvidia.com/uuid": "own"}, map[string]string{"uuid": "own"}},
		{map[string]string{"other.io/model": "x"}, map[string]string{"model": "x"}},
	}
	for _, tc := range cases {
		if got := unqualifiedAttributes("gpu.nvidia.com", tc.in); !maps.Equal(got, tc.want) {
			t.Errorf("unqualifiedAttributes(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMinorsDifferFromIndexes(t *testing.T) {
	n, _ := shapesNode(t)
	for i, want := range []int{3, 0, 2} {
		if got, ret := handle(t, n, i).GetMinorNumber(); ret != nvml.SUCCESS || got != want {
			t.Errorf("GPU %d minor %d %v, want %d", i, got, ret, want)
		}
	}
}

// TestGIsNotOneToN follows the GPU-instance IDs 2, 7 and 0 of the shapes
// scenario through NVML and DCGM, and then through the production NVML
// reader and DCGM join, which must put each instance's activity on the
// right MIG UUID.
func TestGIsNotOneToN(t *testing.T) {
	n, sc := shapesNode(t)
	d := handle(t, n, 1)
	wantGI := map[string]int{shapesMIGb2: 2, shapesMIGb7: 7, shapesMIGb0: 0}
	for i := range 3 {
		m, ret := d.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			t.Fatalf("MIG handle %d: %v", i, ret)
		}
		uuid, _ := m.GetUUID()
		if gi, ret := m.GetGpuInstanceId(); ret != nvml.SUCCESS || gi != wantGI[uuid] {
			t.Errorf("%s: GI %d %v, want %d", uuid, gi, ret, wantGI[uuid])
		}
		gi, ret := d.GetGpuInstanceById(wantGI[uuid])
		if ret != nvml.SUCCESS {
			t.Fatalf("GetGpuInstanceById(%d): %v", wantGI[uuid], ret)
		}
		if info, _ := gi.GetInfo(); int(info.Id) != wantGI[uuid] {
			t.Errorf("GetGpuInstanceById(%d).Id = %d", wantGI[uuid], info.Id)
		}
	}
	if _, ret := d.GetGpuInstanceById(1); ret != nvml.ERROR_NOT_FOUND {
		t.Errorf("GetGpuInstanceById(1): %v, want ERROR_NOT_FOUND", ret)
	}

	// At 90s: pid 30006 keeps b2 70% busy, host pid 700 keeps b0 10% busy,
	// b7 is idle (pid 30004 starts at 2m).
	advanceShapes(t, n, sc, 90*time.Second)
	procs, _ := d.GetComputeRunningProcesses()
	gotProcGI := map[uint32]uint32{}
	for _, p := range procs {
		gotProcGI[p.Pid] = p.GpuInstanceId
	}
	if want := map[uint32]uint32{30004: 7, 30006: 2, 700: 0}; !maps.Equal(gotProcGI, want) {
		t.Errorf("running processes' GIs %v, want %v", gotProcGI, want)
	}

	ctx := context.Background()
	if err := n.DCGM().Watch(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	vals, err := n.DCGM().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := nvmlsource.New(n.NVML(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := src.Init(ctx); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r, err := src.Read(ctx, n.Clock().Now())
	if err != nil {
		t.Fatal(err)
	}
	if unmatched := dcgmsource.Attach(r.GPUs, vals); unmatched != 0 {
		t.Errorf("%d DCGM values matched no GPU or instance", unmatched)
	}
	wantBusy := map[string]float64{shapesMIGb2: 0.7, shapesMIGb7: 0, shapesMIGb0: 0.1}
	got := map[string]float64{}
	for _, g := range r.GPUs {
		for _, m := range g.MIG {
			if m.DCGM == nil {
				t.Errorf("%s (GI %d): no DCGM values", m.UUID, m.GPUInstanceID)
				continue
			}
			got[m.UUID] = m.DCGM.GrEngineActive
		}
	}
	if len(got) != len(wantBusy) {
		t.Fatalf("MIG instances %v, want %v", got, wantBusy)
	}
	for uuid, want := range wantBusy {
		if diff := got[uuid] - want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s: GR_ENGINE_ACTIVE %v, want %v", uuid, got[uuid], want)
		}
	}
}

func TestInitContainerProcesses(t *testing.T) {
	n, sc := shapesNode(t)
	cg := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5a000000_0000_4000_8000_00000000a001.slice/cri-containerd-" + fetchWeightsID + ".scope\n"
	advanceShapes(t, n, sc, 9*time.Second)
	if got, ok := readProc(t, n, "30001", "cgroup"); ok {
		t.Errorf("pid 30001 present before its pod (cgroup %q)", got)
	}
	// fetch-weights runs pid 30001 at 50% over [20s,40s).
	advanceShapes(t, n, sc, 30*time.Second)
	if got, _ := readProc(t, n, "30001", "cgroup"); got != cg {
		t.Errorf("pid 30001 cgroup %q, want %q", got, cg)
	}
	samples, ret := handle(t, n, 0).GetProcessUtilization(uint64(sc.Start.Add(25 * time.Second).UnixMicro()))
	if ret != nvml.SUCCESS {
		t.Fatalf("GetProcessUtilization: %v", ret)
	}
	// Periods of 200ms ending in (25s,30s]: 25 of them, each 50%.
	var util []uint32
	for _, s := range samples {
		if s.Pid == 30001 {
			util = append(util, s.SmUtil)
		}
	}
	if len(util) != 25 || slices.ContainsFunc(util, func(u uint32) bool { return u != 50 }) {
		t.Errorf("pid 30001 samples %v, want 25 of 50%%", util)
	}
	advanceShapes(t, n, sc, 41*time.Second)
	if got, ok := readProc(t, n, "30001", "cgroup"); ok {
		t.Errorf("pid 30001 present after its container ended (cgroup %q)", got)
	}
}

func TestNewRejectsRepeatedGI(t *testing.T) {
	sc := migScenario()
	sc.GPUs[0].MIGInstances[1].GI = sc.GPUs[0].MIGInstances[0].GI
	n, err := New(context.Background(), sc, Options{})
	if err == nil {
		n.Close()
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "gpus[0].migInstances[1]: gi 1 is already used by migInstances[0]") {
		t.Errorf("error %q does not name the repeated gi", err)
	}
}
