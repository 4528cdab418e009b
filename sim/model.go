package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	gpucat "github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// mpsServerPIDBase + GPU index is the PID of the simulated
// nvidia-cuda-mps-server under MPS processView server.
const mpsServerPIDBase = 4000000

// gpu is one simulated physical GPU.
type gpu struct {
	index      int
	minor      int // NVML minor number, /dev/nvidia<minor>
	uuid       string
	model      string
	mode       string
	serverView bool // MPS with processView server
	idleW      float64
	maxW       float64
	totalMiB   uint64

	grp  *group     // whole-GPU processes; nil on MIG GPUs
	migs []*migInst // MIG instances in scenario order; nil unless mode mig

	server *proc // the MPS server, when serverView

	ring       []periodRec // the last driver periods, indexed k % len
	energyBusy float64     // integral of the GPU's busy ratio since start, ns
	energyAt   time.Duration

	dev *device
}

func (g *gpu) isMIG() bool { return g.mode == scenario.ModeMIG }

// migInst is one MIG instance: one GPU instance with one compute
// instance, which spans it (3g.40gb) or, for a compute-instance profile
// (1c.3g.40gb), takes part of its compute slices.
type migInst struct {
	gpu       *gpu
	giID      int // the scenario's gi: NVML's and DCGM's GPU-instance ID
	uuid      string
	profile   string
	slices    int // the GPU instance's
	ciSlices  int // the compute instance's: what it is charged
	memMiB    uint64
	profileID int
	weight    float64 // ciSlices / 7
	grp       *group
	dev       *device
}

// giProfileIDs are the NVML GPU instance profiles of the seven profile
// shapes, in the order gpucat.MIGProfiles lists them.
var giProfileIDs = [7]int{
	nvml.GPU_INSTANCE_PROFILE_1_SLICE,
	nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1,
	nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2,
	nvml.GPU_INSTANCE_PROFILE_2_SLICE,
	nvml.GPU_INSTANCE_PROFILE_3_SLICE,
	nvml.GPU_INSTANCE_PROFILE_4_SLICE,
	nvml.GPU_INSTANCE_PROFILE_7_SLICE,
}

// migProfile looks a profile up in the model's table: the GPU instance's
// slices, the compute instance's (the same but for a compute-instance
// profile such as 1c.3g.40gb), the instance's memory and NVML's GPU
// instance profile ID.
func migProfile(model, profile string) (giSlices, ciSlices int, memMiB uint64, profileID int, err error) {
	parsed, err := gpucat.ParseProfile(profile)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	profiles, err := gpucat.MIGProfiles(model)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	giName := parsed.GPUInstance().String()
	for i, p := range profiles {
		if p.Name == giName && i < len(giProfileIDs) {
			return p.Slices, parsed.Slices(), p.MemoryMiB, giProfileIDs[i], nil
		}
	}
	return 0, 0, 0, 0, fmt.Errorf("MIG profile %q does not exist on %s", profile, model)
}

// buildGPUs creates the GPUs and MIG instances and indexes them by UUID.
func (n *Node) buildGPUs(sc *scenario.Scenario) error {
	n.devByUUID = make(map[string]*device)
	for i, sg := range sc.GPUs {
		mem, err := gpucat.ModelMemoryMiB(sg.Model)
		if err != nil {
			return fmt.Errorf("gpus[%d] (%s): %w", i, sg.UUID, err)
		}
		g := &gpu{
			index: sg.Index, minor: sg.Minor, uuid: sg.UUID, model: sg.Model, mode: sg.Mode,
			serverView: sg.Mode == scenario.ModeMPS && sg.MPSProcessView == "server",
			idleW:      sg.IdleWatts, maxW: sg.MaxWatts, totalMiB: mem,
			ring: make([]periodRec, n.capPeriods),
		}
		g.dev = n.newDevice(g, nil)
		if err := n.addDevice(g.uuid, g.dev); err != nil {
			return fmt.Errorf("gpus[%d]: %w", i, err)
		}
		if g.isMIG() {
			byGI := make(map[int]int)
			for j, sm := range sg.MIGInstances {
				// NVML and DCGM name instances by GI: two alike would
				// make the handles ambiguous.
				if k, dup := byGI[sm.GI]; dup {
					return fmt.Errorf("gpus[%d].migInstances[%d]: gi %d is already used by migInstances[%d]", i, j, sm.GI, k)
				}
				byGI[sm.GI] = j
				m, err := n.buildMIG(g, sm)
				if err != nil {
					return fmt.Errorf("gpus[%d].migInstances[%d]: %w", i, j, err)
				}
				g.migs = append(g.migs, m)
			}
		} else {
			g.grp = &group{}
		}
		n.gpus = append(n.gpus, g)
	}
	return nil
}

func (n *Node) buildMIG(g *gpu, sm scenario.MIGInstance) (*migInst, error) {
	slices, ciSlices, mem, id, err := migProfile(g.model, sm.Profile)
	if err != nil {
		return nil, err
	}
	m := &migInst{
		gpu: g, giID: sm.GI, uuid: sm.UUID, profile: sm.Profile,
		slices: slices, ciSlices: ciSlices, memMiB: mem, profileID: id, weight: float64(ciSlices) / gpucat.TotalSlices,
		grp: &group{},
	}
	m.dev = n.newDevice(g, m)
	return m, n.addDevice(m.uuid, m.dev)
}

func (n *Node) addDevice(uuid string, d *device) error {
	if _, dup := n.devByUUID[uuid]; dup {
		return fmt.Errorf("duplicate device UUID %q", uuid)
	}
	n.devByUUID[uuid] = d
	return nil
}

// buildProcs creates every process: pod processes, host processes and the
// MPS servers.
func (n *Node) buildProcs(sc *scenario.Scenario) error {
	for i, sp := range sc.Pods {
		end := orDefault(sp.End, sc.Duration)
		for j, c := range sp.InitContainers {
			if err := n.containerProcs(sp, c, c.Start, c.End); err != nil {
				return fmt.Errorf("pods[%d].initContainers[%d].%w", i, j, err)
			}
		}
		for j, c := range sp.Containers {
			if err := n.containerProcs(sp, c, sp.ContainersStart(), end); err != nil {
				return fmt.Errorf("pods[%d].containers[%d].%w", i, j, err)
			}
		}
	}
	for i, hp := range sc.HostProcesses {
		cgroup := fmt.Sprintf("0::/system.slice/gpu-host-%d.service\n", hp.PID)
		p, err := n.newProc(hp, 0, sc.Duration, cgroup, "gpu-host")
		if err != nil {
			return fmt.Errorf("hostProcesses[%d]: %w", i, err)
		}
		n.procs = append(n.procs, p)
	}
	for _, g := range n.gpus {
		if g.serverView {
			g.server = &proc{
				pid: uint32(mpsServerPIDBase + g.index), gpu: g, end: sc.Duration,
				comm: "nvidia-cuda-mps-server", cgroup: "0::/system.slice/nvidia-mps.service\n",
				mpsServer: true,
			}
			n.procs = append(n.procs, g.server)
		}
	}
	for _, g := range n.gpus {
		sortBySpan(g.grp)
		for _, m := range g.migs {
			sortBySpan(m.grp)
		}
	}
	return nil
}

// containerProcs builds the processes of one container; start and end are
// their default lifetime.
func (n *Node) containerProcs(sp scenario.Pod, c scenario.Container, start, end time.Duration) error {
	cgroup := podCgroup(sp.UID, containerID(sp, c))
	for k, pr := range c.Processes {
		p, err := n.newProc(pr, start, end, cgroup, "python3")
		if err != nil {
			return fmt.Errorf("processes[%d]: %w", k, err)
		}
		n.procs = append(n.procs, p)
	}
	return nil
}

func sortBySpan(g *group) {
	if g == nil {
		return
	}
	slices.SortStableFunc(g.bySpan, func(a, b *proc) int { return cmp.Compare(a.spanFrom, b.spanFrom) })
}

// newProc builds one process; start and end default to its owner's life.
func (n *Node) newProc(sp scenario.Process, ownerStart, ownerEnd time.Duration, cgroup, comm string) (*proc, error) {
	d, ok := n.devByUUID[sp.Device]
	if !ok {
		return nil, fmt.Errorf("pid %d: unknown device %q", sp.PID, sp.Device)
	}
	if d.mig == nil && d.g.isMIG() {
		return nil, fmt.Errorf("pid %d: device %q is a MIG-enabled GPU; processes there run on one of its MIG instances", sp.PID, sp.Device)
	}
	p := &proc{
		pid: sp.PID, gpu: d.g, inst: d.mig, memMiB: sp.MemoryMiB,
		start: orDefault(sp.Start, ownerStart), end: orDefault(sp.End, ownerEnd),
		comm: orString(sp.Comm, comm), cgroup: cgroup,
	}
	if err := p.setSegments(sp.Busy); err != nil {
		return nil, fmt.Errorf("pid %d: %w", sp.PID, err)
	}
	if err := p.setMemory(sp.Memory); err != nil {
		return nil, fmt.Errorf("pid %d: %w", sp.PID, err)
	}
	grp := d.g.grp
	if d.mig != nil {
		grp = d.mig.grp
	}
	if p.spanTo > p.spanFrom {
		grp.bySpan = append(grp.bySpan, p)
	}
	return p, nil
}

// setSegments copies the busy segments, dropping empty ones, and checks the
// order the cursors rely on.
func (p *proc) setSegments(busy []scenario.Segment) error {
	p.segs = make([]segment, 0, len(busy))
	first := true
	for i, s := range busy {
		switch {
		case s.To < s.From:
			return fmt.Errorf("busy[%d]: to %v is before from %v", i, s.To, s.From)
		case s.Fraction < 0:
			return fmt.Errorf("busy[%d]: negative fraction %v", i, s.Fraction)
		case len(p.segs) > 0 && s.From < p.segs[len(p.segs)-1].to:
			return fmt.Errorf("busy[%d]: from %v overlaps the previous interval", i, s.From)
		case s.To == s.From:
			continue
		}
		p.segs = append(p.segs, segment{s.From, s.To, s.Fraction})
		if s.Fraction > 0 {
			if first {
				p.spanFrom, first = s.From, false
			}
			p.spanTo = s.To
		}
	}
	return nil
}

// podCgroup is the cgroup v2 line of a pod process under the systemd driver.
func podCgroup(uid, id string) string {
	return fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n",
		strings.ReplaceAll(uid, "-", "_"), id)
}

// containerID is the container's runtime ID. The parser fills missing IDs;
// deriving them the same way here keeps hand-built scenarios usable.
func containerID(p scenario.Pod, c scenario.Container) string {
	if c.ID != "" {
		return c.ID
	}
	return scenario.ContainerID(p.UID, c.Name)
}

// orDefault treats a zero offset as unset. A validated scenario has the
// defaults filled in already; this keeps hand-built ones working.
func orDefault(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
