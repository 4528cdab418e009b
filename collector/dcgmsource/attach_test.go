package dcgmsource

import (
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

func nodeGPUs() []attribution.GPU {
	return []attribution.GPU{
		{Index: 0, UUID: "GPU-a"},
		{Index: 1, UUID: "GPU-b", MIGEnabled: true, MIG: []attribution.MIGInstance{
			{UUID: "MIG-b1", GPUInstanceID: 1, Slices: 3},
			{UUID: "MIG-b2", GPUInstanceID: 2, Slices: 4},
		}},
		// Index 3 without index 2: NVML indexes can have gaps here when a
		// GPU failed to enumerate.
		{Index: 3, UUID: "GPU-d"},
	}
}

func gpuVal(idx int, gr float64) Values {
	return Values{Entity: Entity{GPUIndex: idx, GPUInstanceID: -1}, GrEngineActive: gr, EnergyMilliJ: 77}
}

func giVal(idx, gi int, gr float64) Values {
	return Values{Entity: Entity{GPUIndex: idx, GPUInstanceID: gi}, GrEngineActive: gr, EnergyMilliJ: 5}
}

func TestAttach(t *testing.T) {
	type where struct {
		gpu int // position in nodeGPUs
		mig int // position in its MIG list, -1 for the GPU
	}
	tests := []struct {
		name      string
		vals      []Values
		want      map[where]float64 // GrEngineActive expected; others nil
		unmatched int
	}{
		{"none", nil, map[where]float64{}, 0},
		{"gpu by index", []Values{gpuVal(0, 0.1), gpuVal(3, 0.3)},
			map[where]float64{{0, -1}: 0.1, {2, -1}: 0.3}, 0},
		{"instances by GI ID, not position", []Values{giVal(1, 2, 0.2), giVal(1, 1, 0.9), gpuVal(1, 0.5)},
			map[where]float64{{1, 0}: 0.9, {1, 1}: 0.2, {1, -1}: 0.5}, 0},
		{"unknown GPU index", []Values{gpuVal(2, 0.4), gpuVal(0, 0.1)},
			map[where]float64{{0, -1}: 0.1}, 1},
		{"unknown GI ID", []Values{giVal(1, 5, 0.4)}, map[where]float64{}, 1},
		{"instance on a GPU without MIG", []Values{giVal(0, 1, 0.4)}, map[where]float64{}, 1},
		{"later value wins", []Values{gpuVal(0, 0.1), gpuVal(0, 0.6)}, map[where]float64{{0, -1}: 0.6}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gpus := nodeGPUs()
			if n := Attach(gpus, tt.vals); n != tt.unmatched {
				t.Errorf("unmatched = %d, want %d", n, tt.unmatched)
			}
			for gi, g := range gpus {
				check := func(w where, got *attribution.DCGMValues, isGPU bool) {
					want, ok := tt.want[w]
					switch {
					case !ok && got != nil:
						t.Errorf("%v: got DCGM values %+v, want none", w, *got)
					case ok && got == nil:
						t.Errorf("%v: no DCGM values, want GR %v", w, want)
					case ok && got.GrEngineActive != want:
						t.Errorf("%v: GR %v, want %v", w, got.GrEngineActive, want)
					case ok && isGPU && got.EnergyMilliJ != 77:
						t.Errorf("%v: energy %d, want 77", w, got.EnergyMilliJ)
					case ok && !isGPU && got.EnergyMilliJ != 0:
						t.Errorf("%v: instance energy %d, want 0", w, got.EnergyMilliJ)
					}
				}
				check(where{gi, -1}, g.DCGM, true)
				for mi := range g.MIG {
					check(where{gi, mi}, g.MIG[mi].DCGM, false)
				}
			}
		})
	}
}
