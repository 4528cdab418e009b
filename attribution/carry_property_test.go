package attribution

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Where the poll interval is not a multiple of the driver's sample period,
// a cycle's samples cover more or less than its window, and polls shorter
// than the period see cycles without a new sample. Whatever the ratio,
// every cycle's partition closes and, over the run, the container and the
// host process are charged exactly their samples' seconds (less what the
// last cycle still carries).
func TestPropertyCarryOddPollPeriods(t *testing.T) {
	periods := []time.Duration{100 * time.Millisecond, 166666 * time.Microsecond, 200 * time.Millisecond, time.Second}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		P := periods[r.IntN(len(periods))]
		Q := time.Duration(20+r.IntN(2980)) * time.Millisecond
		uuid, uid := gpuID(1), "00000001-0000-4000-8000-000000000001"
		ids := []string{uuid + "::0"}
		e := NewEngine(Config{})
		var wantCtr, wantHost float64 // the samples' seconds
		var gotCtr, gotHost, gotIdle, window float64
		prev := t0
		next := 1 // the next sample period to report: it ends at t0 + next*P
		for cyc := range 60 {
			now := prev.Add(Q)
			if cyc == 0 {
				now = prev
			}
			o := newObs(prev, now).label(LabelReplicas, "2").label(LabelSharingStrategy, "time-slicing")
			o.pod("ns", "p", uid, t0, nil, nil, "c").alloc("ns", "p", "c", "nvidia.com/gpu", ids...)
			o.proc(10, uuid, uuid, 100, uid, "c", "w").proc(20, uuid, uuid, 100, "", "", "host")
			g := o.gpu(GPU{UUID: uuid, SamplePeriod: P, DeviceSamplesOK: true})
			for ; cyc > 0 && !t0.Add(time.Duration(next)*P).After(now); next++ {
				at := t0.Add(time.Duration(next) * P)
				a, h := float64(r.IntN(70)), float64(r.IntN(30))
				if r.IntN(5) == 0 {
					a = 0
				}
				g.DeviceSamples = append(g.DeviceSamples, UtilSample{At: at, Percent: a + h})
				if a > 0 {
					o.Samples = append(o.Samples, ProcessSample{GPU: uuid, PID: 10, At: at, SMUtil: a})
				}
				if h > 0 {
					o.Samples = append(o.Samples, ProcessSample{GPU: uuid, PID: 20, At: at, SMUtil: h})
				}
				wantCtr += a / 100 * P.Seconds()
				wantHost += h / 100 * P.Seconds()
			}
			res := e.Observe(o.Observation)
			checkCycle(t, res)
			for _, gc := range res.GPUs {
				for _, c := range gc.Containers {
					gotCtr += c.Used
				}
				gotHost += gc.Unattributed
				gotIdle += gc.Idle
				window += gc.Capacity
			}
			prev = now
		}
		var carryCtr, carryHost float64
		for _, cr := range e.carries {
			carryHost += cr.unattr
			for _, co := range cr.owners {
				carryCtr += co.sec
			}
		}
		if carryCtr+carryHost > P.Seconds()+1e-9 {
			t.Errorf("seed %d (P %v, poll %v): %.6f s still carried, more than a sample period", seed, P, Q, carryCtr+carryHost)
		}
		if math.Abs(gotCtr+carryCtr-wantCtr) > 1e-9*max(1, wantCtr) {
			t.Errorf("seed %d (P %v, poll %v): container charged %.9f + carried %.9f, its samples say %.9f", seed, P, Q, gotCtr, carryCtr, wantCtr)
		}
		if math.Abs(gotHost+carryHost-wantHost) > 1e-9*max(1, wantHost) {
			t.Errorf("seed %d (P %v, poll %v): unattributed %.9f + carried %.9f, host samples say %.9f", seed, P, Q, gotHost, carryHost, wantHost)
		}
		if math.Abs(gotCtr+gotHost+gotIdle-window) > 1e-9*window {
			t.Errorf("seed %d: partition over the run %.9f != %.9f", seed, gotCtr+gotHost+gotIdle, window)
		}
	}
}
