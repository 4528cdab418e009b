package attribution

import (
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/tenancy"
)

// TestMIGComputeInstancesChargedTheirComputeSlices: three 1c.3g.40gb
// compute instances of one 3g GPU instance, each its own MIG device held
// by its own pod, with the slice counts NVML's attributes give (1 each)
// and with the profile name alone (Slices 0). Either way each is charged
// 1/7 of the GPU and the three add up to their GPU instance's 3/7, never
// 9/7. Each instance is 20% busy (DCGM, instance-relative): its holder
// used 1/7 x 0.2 x 7 = 0.2 s.
func TestMIGComputeInstancesChargedTheirComputeSlices(t *testing.T) {
	for _, c := range []struct {
		name   string
		slices int
	}{{"NVML attributes", 1}, {"name only", 0}} {
		t.Run(c.name, func(t *testing.T) {
			g := gpuID(1)
			o := newObs(at(0), at(7))
			gg := GPU{UUID: g, MIGEnabled: true}
			uids := []string{uidA, uidB, uidC}
			for i := range 3 {
				gg.MIG = append(gg.MIG, MIGInstance{UUID: migID(11 + i), Profile: "1c.3g.40gb", Slices: c.slices,
					GPUInstanceID: 1, DCGM: &DCGMValues{GrEngineActive: 0.2}})
			}
			o.gpu(gg)
			for i, pod := range []string{"pa", "pb", "pc"} {
				o.pod("a", pod, uids[i], time.Time{}, nil, nil, "c").
					alloc("a", pod, "c", "nvidia.com/mig-1c.3g.40gb", migID(11+i)).
					proc(uint32(1+i), g, migID(11+i), 100, uids[i], "c", "x")
			}
			gc := gpuOf(t, attributeOnce(t, Config{}, o), g)
			for i, pod := range []string{"pa", "pb", "pc"} {
				wantRow(t, ctrOf(t, gc, pod, "c", migID(11+i)), string(tenancy.MIG), MethodMeasured, 1.0/7, 1, 0.2)
			}
			// 4/7 of 7 s unallocated; busy 0.6 s all used; idle 6.4.
			wantResiduals(t, gc, 4, 0, 6.4)
		})
	}
}
