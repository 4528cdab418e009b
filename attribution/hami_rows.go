package attribution

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/tenancy"
)

// HAMi as it is deployed (ledger.md, "HAMi, as it is deployed"):
//
// HAMi's device plugin hands kubelet IDs "GPU-<uuid>-<n>" (Project-HAMi/HAMi
// pkg/device-plugin/nvidiadevice/nvinternal/rm/devices.go formats them as
// "%v-%v" of the GPU's ID and a counter), but with its preferred-allocation
// alignment off by default kubelet may pick IDs of OTHER GPUs than the
// scheduler chose. The scheduler's choice is the annotation
// hami.io/vgpu-devices-allocated. So a container's HAMi IDs only say that
// it holds HAMi devices; its annotation entry says which GPUs, and how much
// of each, and that is what it is charged.

// placeHAMi places the HAMi devices of holder h, whose allocation listed
// the HAMi IDs in c.hamiIDs. With a usable annotation entry each of its
// devices is charged on the GPU it names; the slice is the kubelet ID that
// names that GPU if the container has one, else the GPU's UUID. Without
// one, each kubelet ID is charged as one virtual device of its GPU (1/N,
// estimated), as before the annotation could be trusted.
func (e *Engine) placeHAMi(h *holder) {
	c := &e.cy
	if h.pod >= 0 && h.ci >= 0 && c.slotHAMi[int(c.slotBase[h.pod])+h.ci] {
		return // placed by an earlier allocation of the same container
	}
	devs, ok := e.hamiEntry(h)
	if !ok {
		for _, sid := range c.hamiIDs {
			if gpu, inst, ok := c.resolveSlice(sid); ok {
				c.place(h, rowW{gpu: gpu, inst: inst, sid: sid})
			}
		}
		return
	}
	if h.pod >= 0 && h.ci >= 0 {
		c.slotHAMi[int(c.slotBase[h.pod])+h.ci] = true
	}
	// hamiEntry succeeded, so the pod and container are known. The limits
	// (immutable pod spec) decide the share where the metadata has them;
	// the annotation only names the GPUs then.
	meta := ctrMeta(&c.obs.Metadata.Pods[h.pod], h.ci)
	var spec hamiSpec
	if meta.LimitsKnown {
		spec = hamiSpecOf(meta.Limits)
	}
	c.hamiPlaced = c.hamiPlaced[:0]
	c.hamiGhosts = c.hamiGhosts[:0]
	dup := false
	for i := range devs {
		d := &devs[i]
		gpu, ok := c.gpuByAnnotation(d.UUID)
		if !ok {
			c.hamiGhosts = append(c.hamiGhosts, int32(i))
			continue
		}
		if j := c.hamiPlacedAt(gpu); j >= 0 {
			// The entry names this GPU again: charged once, never summed
			// (a tenant repeating a device must not squeeze its
			// neighbours), at the larger of the annotated shares where
			// the limits are unknown.
			dup = true
			r := &c.rows[c.hamiPlaced[j].row]
			if annotated := hamiDeviceShare(d, c.gpus[gpu].MemoryMiB); !meta.LimitsKnown && annotated > r.base {
				r.base = annotated
			}
			r.hamiFloor, r.useFloor = true, true
			continue
		}
		c.placeHAMiDevice(h, d, gpu, meta, spec, false)
	}
	// A device on a GPU this node does not have: HAMi gave the container
	// a vGPU of this node, and kubelet's HAMi IDs say which GPU the device
	// plugin handed it. The device is charged there, as an estimate; the
	// annotation cannot move it off the node.
	unplaced := 0
	for _, di := range c.hamiGhosts {
		d := &devs[di]
		gpu, ok := c.ghostGPU()
		if !ok {
			unplaced++
			c.anomaly(AnomalyUnknownDevice, h.who()+" "+d.UUID, "HAMi annotation of "+h.who()+
				" names GPU "+strconv.Quote(d.UUID)+", which this node does not have; its share stays unallocated, its use on this node's GPUs is its own")
			continue
		}
		c.anomaly(AnomalyUnknownDevice, h.who()+" "+d.UUID, "HAMi annotation of "+h.who()+
			" names GPU "+strconv.Quote(d.UUID)+", which this node does not have; charged on "+c.gpus[gpu].UUID+
			", which its kubelet device ID names, at least its use there, as an estimate")
		c.placeHAMiDevice(h, d, gpu, meta, spec, true)
	}
	if n, ok := limitInt(meta.Limits[ResourceGPU]); ok && meta.LimitsKnown && n > 0 && n != len(c.hamiPlaced)+unplaced {
		// The pod spec asks for n vGPUs (HAMi gives each its own GPU); an
		// entry naming fewer hides one, and nothing says which GPU it is.
		c.anomaly(AnomalyHAMiLimitsMismatch, h.who(), fmt.Sprintf("HAMi annotation of %s names %d GPUs, its resource limits ask for %d",
			h.who(), len(c.hamiPlaced)+unplaced, n))
	}
	if dup {
		c.anomaly(AnomalyHAMiDuplicateGPU, h.who(), "HAMi annotation entry of "+h.who()+
			" names a GPU more than once; charged once per GPU, at least its framebuffer, as an estimate")
	}
	// What a flagged container demonstrably holds: its framebuffer.
	for _, hp := range c.hamiPlaced {
		if r := &c.rows[hp.row]; r.hamiFloor && r.base >= 0 {
			r.base = max(r.base, c.framebufferShare(h.pod, h.ci, hp.gpu))
		}
	}
}

// placeHAMiDevice gives holder h a row for annotation device d on GPU
// gpu: the limits' share where the metadata has them, else the entry's.
// A ghost is a device whose GPU is not on this node, placed on the GPU
// kubelet's ID names. Rows the annotation cannot vouch for (they disagree
// with the limits, give nothing, or are ghosts) are estimated and floored
// by the framebuffer; those and rows without a core limit are floored by
// the container's use there (floorHAMiUse).
func (c *cycle) placeHAMiDevice(h *holder, d *HAMiDevice, gpu int, meta *ContainerMeta, spec hamiSpec, ghost bool) {
	mem := c.gpus[gpu].MemoryMiB
	base, flagged, uncapped := hamiDeviceShare(d, mem), ghost, d.Cores == 0
	if meta.LimitsKnown {
		if !ghost && !spec.agrees(d, mem) {
			flagged = true
			c.anomaly(AnomalyHAMiLimitsMismatch, h.who()+" "+c.gpus[gpu].UUID, fmt.Sprintf(
				"HAMi annotation of %s gives %d MiB and %d%% cores on %s, its resource limits ask for %s; charged by the limits, at least its framebuffer, as an estimate",
				h.who(), d.MemoryMiB, d.Cores, c.gpus[gpu].UUID, spec))
		}
		base, uncapped = spec.share(mem), spec.cores == 0
	}
	switch {
	case base < 0:
		c.anomaly(AnomalyHAMiMismatch, h.who(), "HAMi device of "+h.who()+" on "+c.gpus[gpu].UUID+
			" has no core limit and the GPU's memory size is unknown; charged 1/N of the GPU as an estimate")
	case base == 0:
		flagged = true
		c.anomaly(AnomalyHAMiZeroShare, h.who()+" "+c.gpus[gpu].UUID, "HAMi annotation of "+h.who()+
			" gives it no cores and no memory on "+c.gpus[gpu].UUID+"; charged its framebuffer there, as an estimate")
	}
	ri, _ := c.place(h, rowW{gpu: gpu, inst: -1, sid: c.hamiSlice(gpu), src: srcHAMi, base: base,
		hamiFloor: flagged, useFloor: flagged || uncapped})
	c.hamiPlaced = append(c.hamiPlaced, hamiPlaced{gpu: gpu, row: ri})
}

// ghostGPU is the first GPU of this node that one of the container's
// kubelet HAMi IDs names and that has no row of its annotation entry yet.
func (c *cycle) ghostGPU() (int, bool) {
	for _, sid := range c.hamiIDs {
		gpu, ok := c.gpuByUUID(sid.UUID)
		if ok && c.hamiPlacedAt(gpu) < 0 {
			return gpu, true
		}
	}
	return -1, false
}

// hamiPlaced is a GPU the container being placed got a HAMi row on.
type hamiPlaced struct {
	gpu int
	row int32
}

// hamiPlacedAt finds gpu among the container's HAMi rows so far (-1).
// Containers hold a handful of GPUs, so a scan beats a map.
func (c *cycle) hamiPlacedAt(gpu int) int {
	for j, hp := range c.hamiPlaced {
		if hp.gpu == gpu {
			return j
		}
	}
	return -1
}

// String describes a spec for anomaly details.
func (s hamiSpec) String() string {
	mem := strconv.Itoa(s.memPct) + "% memory"
	if s.memMiB > 0 {
		mem = strconv.FormatUint(s.memMiB, 10) + " MiB"
	}
	return mem + " and " + strconv.Itoa(s.cores) + "% cores"
}

// hamiDeviceShare is cores/100, else memMiB over the GPU's memory when no
// core limit is set; -1 when neither says anything.
func hamiDeviceShare(d *HAMiDevice, gpuMemMiB uint64) float64 {
	switch {
	case d.Cores > 0:
		return float64(d.Cores) / 100
	case gpuMemMiB > 0:
		return min(float64(d.MemoryMiB)/float64(gpuMemMiB), 1)
	}
	return -1
}

// gpuByAnnotation finds the GPU an annotation names; HAMi writes the UUID
// as NVML reports it, but case is not worth a mismatch.
func (c *cycle) gpuByAnnotation(uuid string) (int, bool) {
	if gi, ok := c.gpuByUUID(uuid); ok {
		return gi, true
	}
	for gi := range c.gpus {
		if strings.EqualFold(c.gpus[gi].UUID, uuid) {
			return gi, true
		}
	}
	return -1, false
}

// hamiSlice names an annotation row: the container's kubelet ID for that
// GPU where it has one (so the row matches what kubelet lists), else the
// GPU's UUID.
func (c *cycle) hamiSlice(gpu int) SliceID {
	uuid := c.gpus[gpu].UUID
	for _, sid := range c.hamiIDs {
		if strings.EqualFold(sid.UUID, uuid) {
			return sid
		}
	}
	return SliceID{Raw: uuid, Kind: SliceKindGPU, UUID: uuid, Replica: -1, GI: -1, CI: -1}
}

func (h *holder) who() string { return h.ctr.ns + "/" + h.ctr.pod + "/" + h.ctr.container }

// hamiEntry returns holder h's devices from its pod's annotation, the
// value pinned for the container (pins.go). It raises the anomaly and
// returns false where there is no usable entry.
func (e *Engine) hamiEntry(h *holder) ([]HAMiDevice, bool) {
	c := &e.cy
	mismatch := func(why string) ([]HAMiDevice, bool) {
		c.anomaly(AnomalyHAMiMismatch, h.who(), "HAMi devices of "+h.who()+": "+why+
			"; each kubelet ID charged as 1/N of its GPU, an estimate")
		return nil, false
	}
	if h.pod < 0 || h.ci < 0 {
		return mismatch("no pod metadata")
	}
	p := &c.obs.Metadata.Pods[h.pod]
	val, ok := e.pinnedAnnotation(h, p, HAMiAnnotation)
	if !ok {
		return mismatch("pod has no " + HAMiAnnotation + " annotation")
	}
	parts, err := e.parseHAMi(val)
	if err != nil {
		c.anomaly(AnomalyBadAnnotation, h.who(), err.Error()+"; "+h.who()+" charged 1/N of its kubelet GPUs, an estimate")
		return nil, false
	}
	idx, ok := hamiEntryIndex(len(parts), len(p.InitContainers), len(p.Containers), h.ci)
	switch {
	case idx < 0 && !ok:
		c.anomaly(AnomalyBadAnnotation, h.who(), HAMiAnnotation+" of "+h.ctr.ns+"/"+h.ctr.pod+" has "+
			strconv.Itoa(len(parts))+" entries for "+strconv.Itoa(len(p.InitContainers))+" init and "+
			strconv.Itoa(len(p.Containers))+" containers; "+h.who()+" charged 1/N of its kubelet GPUs, an estimate")
		return nil, false
	case idx < 0 || len(parts[idx]) == 0:
		return mismatch("annotation has no devices for this container")
	}
	return parts[idx], true
}

// hamiEntryIndex is the annotation entry of container ci (containers.go
// numbering) when the annotation has n entries: HAMi 2.9 and later write
// one per container, init containers first (Project-HAMi/HAMi
// pkg/device/devices.go walks InitContainers before Containers); older
// HAMi one per regular container. It returns -1 and true for an init
// container under the older form (no entry), -1 and false when n fits
// neither form.
func hamiEntryIndex(n, nInit, nCtr, ci int) (int, bool) {
	switch {
	case n == nInit+nCtr:
		return ci, true
	case n == nCtr && ci >= nInit:
		return ci - nInit, true
	case n == nCtr:
		return -1, true
	}
	return -1, false
}

// flagUnlisted marks group g, just given its phantom row, when its
// container is charged by its HAMi annotation and runs on a device the
// annotation does not name: its use there is still its own, but an
// estimate, and the mismatch is an anomaly.
func (c *cycle) flagUnlisted(g int32, pod, ci int, device string) {
	if pod < 0 || ci < 0 || !c.slotHAMi[int(c.slotBase[pod])+ci] {
		return
	}
	c.groups[g].estimated = true
	// It is still the container's HAMi use (and shares the GPU without
	// isolation, which the noisy-neighbour detector must see), and it is
	// charged at least that use where the GPU has room (floorHAMiUse).
	r := &c.rows[c.groups[g].head]
	r.mode, r.useFloor = tenancy.HAMi, r.inst < 0
	ctr := &c.groups[g].ctr
	who := ctr.ns + "/" + ctr.pod + "/" + ctr.container
	c.anomaly(AnomalyHAMiUnlistedGPU, who+" "+device, "processes of "+who+" run on "+device+
		", which its "+HAMiAnnotation+" entry does not name; usage charged to it, and held at least as much, as an estimate")
}
