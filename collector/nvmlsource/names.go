package nvmlsource

import (
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuledger/gpuledger/gpu"
)

// migProfile tells a MIG device's profile and the compute slices it is
// charged (package gpu says why a compute instance counts its own slices),
// preferring the profile in its name ("NVIDIA A100-SXM4-80GB MIG 3g.40gb")
// and the slice counts in its attributes, each standing in for the other
// when missing. Of the attributes, the compute instance's slice count
// wins; the GPU instance's stands in where a driver leaves it 0.
func migProfile(name string, attrs nvml.DeviceAttributes, attrsOK bool, totalBytes uint64) (profile string, slices int) {
	profile = gpu.ProfileFromDeviceName(name)
	giSlices := 0
	switch {
	case attrsOK && attrs.ComputeInstanceSliceCount > 0:
		slices = int(attrs.ComputeInstanceSliceCount)
		giSlices = int(attrs.GpuInstanceSliceCount)
	case attrsOK && attrs.GpuInstanceSliceCount > 0:
		slices = int(attrs.GpuInstanceSliceCount)
	case profile != "":
		slices, _ = gpu.ProfileSlices(profile) // it parsed in ProfileFromDeviceName
	}
	if profile == "" && attrsOK && slices > 0 && attrs.MemorySizeMB > 0 {
		profile = fmt.Sprintf("%dg.%dgb", slices, migMemoryGB(attrs.MemorySizeMB, totalBytes))
		if giSlices > slices {
			// A compute instance of part of its GPU instance.
			profile = fmt.Sprintf("%dc.%dg.%dgb", slices, giSlices, migMemoryGB(attrs.MemorySizeMB, totalBytes))
		}
	}
	return profile, slices
}

// migMemoryGB rounds a MIG instance's memory to the GB of its profile name
// the way NVIDIA's device plugin does: the fraction of the GPU's memory,
// rounded up to eighths, times the GPU's memory in whole GB. So 40192 MB
// on an 80 GB A100 is "40gb", not 39.
func migMemoryGB(instanceMB, totalBytes uint64) uint64 {
	const gib = 1 << 30
	if totalBytes == 0 {
		return (instanceMB + 1023) / 1024
	}
	fraction := float64(instanceMB<<20) / float64(totalBytes)
	fraction = math.Ceil(fraction*8) / 8
	totalGB := float64((totalBytes + gib - 1) / gib)
	return uint64(math.Round(fraction * totalGB))
}
