package attribution

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// printed is a quantity as the exports print it: 6 decimals
// (ledger.FormatFloat), read back.
func printed(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64), 64)
	return f
}

// Three tenants of a third of a GPU each, 0.5 s ledger intervals and polls
// every 0.3 s from a fractional second: the container rows are not whole
// micro-GPU-seconds, and printed each rounds on its own. The residual rows
// absorb that rounding, so each column of a GPU's rows, as printed, still
// sums to the row's interval length.
func TestLedgerColumnsSumAsPrinted(t *testing.T) {
	g := gpuID(1)
	uids := []string{uidA, uidB, uidC}
	obs := func(prev, now float64) Observation {
		o := newObs(at(prev), at(now)).label(LabelSharingStrategy, "time-slicing").label(LabelReplicas, "3")
		gp := o.gpu(GPU{UUID: g, SamplePeriod: 100 * time.Millisecond, DeviceSamplesOK: true})
		for i, uid := range uids {
			ns := "t" + strconv.Itoa(i)
			o.pod(ns, "p", uid, time.Time{}, nil, nil, "c").alloc(ns, "p", "c", "nvidia.com/gpu", g+"::"+strconv.Itoa(i)).
				proc(uint32(10+i), g, g, 0, uid, "c", "x")
		}
		// Samples of 100 ms periods ending in (prev, now], from 0.
		for k := math.Floor(prev*10+1e-9) + 1; k/10 <= now+1e-9; k++ {
			if now <= prev {
				break
			}
			gp.DeviceSamples = append(gp.DeviceSamples, UtilSample{At: at(k / 10), Percent: 67})
			for i := range uids {
				o.Samples = append(o.Samples, ProcessSample{GPU: g, PID: uint32(10 + i), At: at(k / 10), SMUtil: float64(7 + 10*i)})
			}
		}
		return o.Observation
	}
	e := NewEngine(Config{LedgerInterval: 500 * time.Millisecond})
	var rows []Row
	prev := 0.0501
	e.Observe(obs(prev, prev))
	for i := 1; i <= 40; i++ {
		now := 0.0501 + 0.3*float64(i)
		rows = append(rows, e.Observe(obs(prev, now)).Rows...)
		prev = now
	}
	rows = append(rows, e.Flush(at(prev)).Rows...)
	type key struct{ start, end int64 }
	type sums struct{ alloc, used float64 }
	byInterval := map[key]*sums{}
	for _, r := range rows {
		k := key{r.IntervalStart.UnixNano(), r.IntervalEnd.UnixNano()}
		if byInterval[k] == nil {
			byInterval[k] = &sums{}
		}
		s := byInterval[k]
		for _, v := range []float64{r.AllocatedGPUSeconds, r.UsedGPUSeconds} {
			if printed(v) < 0 {
				t.Errorf("negative quantity %v in %+v", v, r)
			}
		}
		s.alloc += printed(r.AllocatedGPUSeconds)
		s.used += printed(r.UsedGPUSeconds)
	}
	if len(byInterval) < 20 {
		t.Fatalf("%d intervals, want the run's 12 s cut into 0.5 s ones", len(byInterval))
	}
	for k, s := range byInterval {
		d := float64(k.end-k.start) / 1e9
		// The interval length itself is printed to the nanosecond; only the
		// residual rows' own rounding (half a micro-second each) may show.
		if math.Abs(s.alloc-d) > 6e-7 || math.Abs(s.used-d) > 6e-7 {
			t.Errorf("interval %v..%v (%.9f s): allocated column sums to %.9f, used column to %.9f as printed",
				time.Unix(0, k.start).UTC(), time.Unix(0, k.end).UTC(), d, s.alloc, s.used)
		}
	}
}
