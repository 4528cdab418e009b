package sim

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// gpuInstance is a MIG GPU instance handle; each holds one compute
// instance (ID 0) spanning all its slices.
type gpuInstance struct {
	mock.GpuInstance
	m *migInst
}

type computeInstance struct {
	mock.ComputeInstance
	gi *gpuInstance
}

var (
	_ nvml.GpuInstance     = (*gpuInstance)(nil)
	_ nvml.ComputeInstance = (*computeInstance)(nil)
)

// GetGpuInstanceById returns the GPU instance with that ID on a MIG GPU.
func (d *device) GetGpuInstanceById(id int) (nvml.GpuInstance, nvml.Return) {
	switch {
	case d.mig != nil:
		return nil, nvml.ERROR_INVALID_ARGUMENT
	case !d.g.isMIG():
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	for _, m := range d.g.migs {
		if m.giID == id {
			gi := &gpuInstance{m: m}
			fillUnset(&gi.GpuInstance)
			return gi, nvml.SUCCESS
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

// GetInfo describes the GPU instance.
func (gi *gpuInstance) GetInfo() (nvml.GpuInstanceInfo, nvml.Return) {
	return nvml.GpuInstanceInfo{
		Device: gi.m.gpu.dev, Id: uint32(gi.m.giID), ProfileId: uint32(gi.m.profileID),
		Placement: nvml.GpuInstancePlacement{Size: uint32(gi.m.slices)},
	}, nvml.SUCCESS
}

// GetComputeInstanceById returns the instance's only compute instance, 0.
func (gi *gpuInstance) GetComputeInstanceById(id int) (nvml.ComputeInstance, nvml.Return) {
	if id != 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	ci := &computeInstance{gi: gi}
	fillUnset(&ci.ComputeInstance)
	return ci, nvml.SUCCESS
}

// GetInfo describes the compute instance.
func (ci *computeInstance) GetInfo() (nvml.ComputeInstanceInfo, nvml.Return) {
	return nvml.ComputeInstanceInfo{
		Device: ci.gi.m.gpu.dev, GpuInstance: ci.gi, Id: 0, ProfileId: uint32(computeProfileID(ci.gi.m.ciSlices)),
		Placement: nvml.ComputeInstancePlacement{Size: uint32(ci.gi.m.ciSlices)},
	}, nvml.SUCCESS
}

// computeProfileID maps compute slices to the NVML compute instance profile.
func computeProfileID(slices int) int {
	switch slices {
	case 1:
		return nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE
	case 2:
		return nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE
	case 3:
		return nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE
	case 4:
		return nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE
	case 6:
		return nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE
	}
	return nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE
}
