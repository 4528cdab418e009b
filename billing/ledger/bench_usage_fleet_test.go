package ledger

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// adviseFleetMinute is one minute of the advisor's benchmark fleet: 100
// whole A100s, each with one replica of one of 25 Deployments and the
// GPU's idle remainder.
func adviseFleetMinute(start time.Time, m int) []attribution.Row {
	rows := make([]attribution.Row, 0, 200)
	for i := range 100 {
		gpu, pod, team := fmt.Sprintf("GPU-%d", i), fmt.Sprintf("svc%d-7d4b9c8f6d-%cxz2q", i/4, "bcdf"[i%4]), fmt.Sprintf("team-%d", i/20)
		used := 60 * float64((m*7+i*13)%100) / 100 * float64(i%5) / 5
		rows = append(rows, attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: fmt.Sprintf("n%d", i/8), GPUUUID: gpu,
			GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindContainer, Namespace: team, Pod: pod,
			PodUID: pod, Container: "main", Team: team, AllocatedGPUSeconds: 60, UsedGPUSeconds: used, MemoryMiBSeconds: 60 * 4000, Method: "measured"},
			attribution.Row{IntervalStart: start, IntervalEnd: start.Add(time.Minute), Node: fmt.Sprintf("n%d", i/8), GPUUUID: gpu,
				GPUModel: "A100-SXM4-80GB", SliceID: gpu, SharingMode: "exclusive", Kind: attribution.KindIdle, UsedGPUSeconds: 60 - used, Method: "measured"})
	}
	return rows
}
