package dcgmsource

import "github.com/gpuledger/gpuledger/attribution"

// Attach puts DCGM values onto the GPUs and MIG instances read from NVML:
// a GPU entity by its NVML index, a GPU-instance entity by (GPU index, GPU
// instance ID) onto the MIG instance NVML reported with that ID. It
// returns how many values found no GPU or instance (for a health counter);
// their data is dropped. A later value for the same entity replaces an
// earlier one.
func Attach(gpus []attribution.GPU, vals []Values) (unmatched int) {
	if len(vals) == 0 {
		return 0
	}
	dv := make([]attribution.DCGMValues, len(vals)) // one allocation for all
	for i, v := range vals {
		dv[i] = attribution.DCGMValues{
			GrEngineActive: v.GrEngineActive,
			SMActive:       v.SMActive,
			DRAMActive:     v.DRAMActive,
			FBUsedMiB:      v.FBUsedMiB,
			PowerWatts:     v.PowerWatts,
			EnergyMilliJ:   v.EnergyMilliJ,
		}
		g := gpuByIndex(gpus, v.Entity.GPUIndex)
		switch {
		case g == nil:
			unmatched++
		case v.Entity.GPUInstanceID < 0:
			g.DCGM = &dv[i]
		default:
			m := instanceByID(g, v.Entity.GPUInstanceID)
			if m == nil {
				unmatched++
				continue
			}
			dv[i].EnergyMilliJ = 0 // a GPU-only counter
			m.DCGM = &dv[i]
		}
	}
	return unmatched
}

func gpuByIndex(gpus []attribution.GPU, index int) *attribution.GPU {
	for i := range gpus {
		if gpus[i].Index == index {
			return &gpus[i]
		}
	}
	return nil
}

func instanceByID(g *attribution.GPU, gi int) *attribution.MIGInstance {
	for i := range g.MIG {
		if g.MIG[i].GPUInstanceID == gi {
			return &g.MIG[i]
		}
	}
	return nil
}
