package attribution

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// denseNode is 8 time-sliced GPUs shared by 400 pods running 1,000
// processes, five 200 ms samples per process per 1 s cycle.
func denseNode() Observation {
	o := newObs(at(0), at(1)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "50")
	var gpus []string
	for gi := range 8 {
		g := gpuID(gi + 1)
		gpus = append(gpus, g)
		gp := o.gpu(GPU{Index: gi, UUID: g, SamplePeriod: 200 * time.Millisecond, DeviceSamplesOK: true, EnergyOK: true})
		for k := range 5 {
			gp.DeviceSamples = append(gp.DeviceSamples, UtilSample{At: at(0.2 * float64(k+1)), Percent: 90})
		}
	}
	for i := range 16 {
		o.ns("ns"+strconv.Itoa(i), map[string]string{"team": "team" + strconv.Itoa(i)})
	}
	for pi := range 400 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", pi, pi)
		ns, name := "ns"+strconv.Itoa(pi%16), "pod-"+strconv.Itoa(pi)
		g := gpus[pi%8]
		o.pod(ns, name, uid, at(-3600), map[string]string{"app": "x"}, nil, "main").
			alloc(ns, name, "main", "nvidia.com/gpu", g+"::"+strconv.Itoa(pi/8))
	}
	// The collector reads processes and samples device by device.
	for gi, g := range gpus {
		for k := range 1000 {
			if (k%400)%8 != gi {
				continue
			}
			p := o.Metadata.Pods[k%400]
			pid := uint32(10000 + k)
			o.proc(pid, g, g, 512, p.UID, "main", "python")
			for s := range 5 {
				o.Samples = append(o.Samples, ProcessSample{GPU: g, PID: pid, At: at(0.2 * float64(s+1)), SMUtil: 2})
			}
		}
	}
	return o.Observation
}

// shift moves an observation one window later, as the next cycle. Sample
// timestamps stay: the engine only compares them with each other, and
// moving 5,000 of them would be most of what the benchmark measures.
func shift(o *Observation, d time.Duration) {
	o.Prev, o.Time = o.Time, o.Time.Add(d)
	for gi := range o.GPUs {
		o.GPUs[gi].EnergyMilliJoules += 300_000
	}
}

func BenchmarkObserveDenseNode(b *testing.B) {
	o := denseNode()
	e := NewEngine(Config{})
	base := o
	base.Time = base.Prev
	e.Observe(base)
	b.ReportAllocs()
	for b.Loop() {
		e.Observe(o)
		shift(&o, time.Second)
	}
}

func TestDenseNodePartitions(t *testing.T) {
	o := denseNode()
	e := NewEngine(Config{})
	base := o
	base.Time = base.Prev
	e.Observe(base)
	for range 70 {
		res := e.Observe(o)
		checkCycle(t, res)
		// Each GPU: 50 pods x 1/50 allocated, nothing unallocated. Per
		// 200 ms period the device is busy 0.18 s while its 125
		// processes claim 125 x 2% x 0.2 s = 0.5 s, so they are scaled
		// down to 0.18 s: 0.9 s used, nothing unattributed, 0.1 s idle.
		for _, g := range res.GPUs {
			wantResiduals(t, g, 0, 0, 0.1)
		}
		shift(&o, time.Second)
	}
}

// hamiNode is 8 GPUs shared through HAMi by 200 pods, each with a sidecar
// init container and one container whose annotation names a GPU other
// than its kubelet ID's (HAMi's default), 200 processes.
func hamiNode() Observation {
	o := newObs(at(0), at(1))
	var gpus []string
	for gi := range 8 {
		g := gpuID(gi + 1)
		gpus = append(gpus, g)
		gp := o.gpu(GPU{Index: gi, UUID: g, SamplePeriod: 200 * time.Millisecond, DeviceSamplesOK: true, EnergyOK: true})
		for k := range 5 {
			gp.DeviceSamples = append(gp.DeviceSamples, UtilSample{At: at(0.2 * float64(k+1)), Percent: 90})
		}
	}
	for pi := range 200 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", pi, pi)
		ns, name := "ns"+strconv.Itoa(pi%16), "pod-"+strconv.Itoa(pi)
		g := gpus[pi%8]
		ann := ";" + g + ",NVIDIA,2000,4:;"
		o.podInit(ns, name, uid, hamiAnn(ann), []string{"proxy+"}, "main").
			alloc(ns, name, "main", "nvidia.com/gpu", gpus[(pi+1)%8]+"-"+strconv.Itoa(pi/8))
	}
	for gi, g := range gpus {
		for k := range 200 {
			if k%8 != gi {
				continue
			}
			p := o.Metadata.Pods[k]
			pid := uint32(10000 + k)
			o.proc(pid, g, g, 512, p.UID, "main", "python")
			for s := range 5 {
				o.Samples = append(o.Samples, ProcessSample{GPU: g, PID: pid, At: at(0.2 * float64(s+1)), SMUtil: 3})
			}
		}
	}
	return o.Observation
}

func BenchmarkObserveHAMiNode(b *testing.B) {
	o := hamiNode()
	e := NewEngine(Config{})
	base := o
	base.Time = base.Prev
	e.Observe(base)
	b.ReportAllocs()
	for b.Loop() {
		e.Observe(o)
		shift(&o, time.Second)
	}
}

func TestHAMiNodePartitions(t *testing.T) {
	o := hamiNode()
	e := NewEngine(Config{})
	base := o
	base.Time = base.Prev
	if res := e.Observe(base); len(res.NewPins) != 200 {
		t.Fatalf("%d pins on the first cycle, want one per container: 200", len(res.NewPins))
	}
	for range 3 {
		res := e.Observe(o)
		checkCycle(t, res)
		if len(res.Anomalies) != 0 || len(res.NewPins) != 0 {
			t.Fatalf("anomalies %+v, pins %+v", res.Anomalies, res.NewPins)
		}
		// Each GPU: the 25 containers whose annotation names it hold 4
		// cores each, 100 in all: nothing unallocated. Their processes
		// run there too: 25 x 3% x 0.2 s = 0.15 s per period under the
		// device's 0.18 s: 0.75 s used, 0.15 s busy without a process,
		// 0.1 s idle.
		for _, g := range res.GPUs {
			wantResiduals(t, g, 0, 0.15, 0.1)
		}
		shift(&o, time.Second)
	}
}
