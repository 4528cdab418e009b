package attribution

import (
	"math"
	"strconv"
)

// HAMi's NVIDIA resource names, as its Helm chart sets them by default
// (values.yaml resourceCores, resourceMem, resourceMemPercentage):
// per-vGPU compute percent, memory in MiB and memory in percent of the
// device.
const (
	HAMiResourceCores         = "nvidia.com/gpucores"
	HAMiResourceMem           = "nvidia.com/gpumem"
	HAMiResourceMemPercentage = "nvidia.com/gpumem-percentage"
)

// Anomaly kinds of HAMi containers whose annotation cannot be taken at
// its word (platforms.md, "HAMi"). Such a container is charged at least
// the framebuffer its processes hold on the GPU, as an estimate.
const (
	// AnomalyHAMiLimitsMismatch: the annotation's memory or cores for a
	// device differ from what the container's resource limits ask for;
	// the limits decide the share.
	AnomalyHAMiLimitsMismatch = "hami_limits_mismatch"
	// AnomalyHAMiZeroShare: a device of the entry gives the container no
	// share at all (no cores, no memory).
	AnomalyHAMiZeroShare = "hami_zero_share"
	// AnomalyHAMiDuplicateGPU: one container's entry names the same GPU
	// more than once; it is charged once.
	AnomalyHAMiDuplicateGPU = "hami_duplicate_gpu"
)

// hamiSpec is what a container's pod spec asks HAMi for per vGPU, with
// HAMi's defaults where it is silent (its scheduler's device config:
// defaultCores 0, no core limit; defaultMemory 0, which makes the memory
// request 100% of the device; pkg/device/nvidia GenerateResourceRequests).
type hamiSpec struct {
	cores  int    // percent of the GPU's compute; 0: not limited
	memMiB uint64 // MiB; 0: memPct of the device instead
	memPct int    // percent of the device's memory when memMiB is 0
}

// hamiSpecOf reads the spec from a container's limits. Like HAMi, a
// gpumem of 0 or a percentage of 0 counts as unset, gpumem wins over a
// percentage, and a percentage above 100 is 100. Values that are not
// whole numbers count as unset.
func hamiSpecOf(limits map[string]string) hamiSpec {
	s := hamiSpec{memPct: 100}
	if v, ok := limitInt(limits[HAMiResourceCores]); ok {
		s.cores = min(v, 100)
	}
	if v, ok := limitInt(limits[HAMiResourceMem]); ok && v > 0 {
		s.memMiB = uint64(v)
	} else if v, ok := limitInt(limits[HAMiResourceMemPercentage]); ok && v > 0 {
		s.memPct = min(v, 100)
	}
	return s
}

// limitInt parses a limit as a whole number up to 2^31-1.
func limitInt(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// share is the spec's share of a GPU with gpuMemMiB of memory, by the
// annotation's rule: cores/100, else memory over the device's; -1 when
// neither says anything (no core limit, device memory unknown).
func (s hamiSpec) share(gpuMemMiB uint64) float64 {
	switch {
	case s.cores > 0:
		return float64(s.cores) / 100
	case gpuMemMiB == 0:
		return -1
	case s.memMiB > 0:
		return min(float64(s.memMiB)/float64(gpuMemMiB), 1)
	}
	return float64(s.memPct) / 100
}

// agrees reports whether an annotation device is what the spec asks for:
// the same cores, and the same MiB for a gpumem limit or, for a
// percentage (or the default 100%), that share of the device within 1% of
// its memory (HAMi registers the device's memory itself and rounds).
func (s hamiSpec) agrees(d *HAMiDevice, gpuMemMiB uint64) bool {
	if d.Cores != s.cores {
		return false
	}
	if s.memMiB > 0 {
		return d.MemoryMiB == s.memMiB
	}
	if gpuMemMiB == 0 {
		return true
	}
	want := float64(gpuMemMiB) * float64(s.memPct) / 100
	return math.Abs(float64(d.MemoryMiB)-want) <= float64(gpuMemMiB)/100
}

// framebufferShare is the memory the processes of container ci of pod
// hold on GPU gpu this cycle, over the GPU's memory (at most 1): what a
// container demonstrably holds whatever its annotation says. 0 when the
// GPU's memory is unknown.
func (c *cycle) framebufferShare(pod, ci, gpu int) float64 {
	mem := c.gpus[gpu].MemoryMiB
	if pod < 0 || ci < 0 || mem == 0 {
		return 0
	}
	p := &c.obs.Metadata.Pods[pod]
	id := ctrMeta(p, ci).ID
	if id == "" {
		return 0
	}
	uuid := c.gpus[gpu].UUID
	var used uint64
	for i := range c.obs.Processes {
		pr := &c.obs.Processes[i]
		if pr.Exited || pr.GPU != uuid || pr.Owner.ContainerID != id || pr.Owner.PodUID != p.UID {
			continue
		}
		used += pr.MemoryMiB
	}
	return min(float64(used)/float64(mem), 1)
}
