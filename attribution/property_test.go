package attribution

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// randomNode is a node whose GPUs, pods and processes change at random
// from cycle to cycle, with garbage mixed in.
type randomNode struct {
	r       *rand.Rand
	gpus    []GPU
	energy  []uint64
	pods    []PodMeta
	nsCount int
	dra     []DRADevice
}

func newRandomNode(r *rand.Rand) *randomNode {
	n := &randomNode{r: r, nsCount: 1 + r.IntN(3)}
	for gi := range 1 + r.IntN(4) {
		g := GPU{Index: gi, UUID: gpuID(1000*int(r.Uint32()%1000) + gi), Model: "A100-SXM4-80GB", MemoryMiB: 81920}
		if r.IntN(3) == 0 {
			g.MIGEnabled = true
			left := 7
			for ii := 0; left > 0 && ii < 4; ii++ {
				s := 1 + r.IntN(left)
				left -= s
				g.MIG = append(g.MIG, MIGInstance{UUID: migID(100*gi + ii + int(r.Uint32()%1000)*1000), Profile: strconv.Itoa(s) + "g.10gb",
					Slices: s, GPUInstanceID: ii + 1})
			}
		}
		if r.IntN(4) != 0 {
			g.Minor, g.HasMinor = (gi+r.IntN(2))%4, true // sometimes not the index, sometimes twice
		}
		n.gpus = append(n.gpus, g)
		n.energy = append(n.energy, uint64(r.IntN(1e9)))
		n.dra = append(n.dra, n.draDevice("gpu-"+strconv.Itoa(gi), g.UUID))
		for ii, m := range g.MIG {
			n.dra = append(n.dra, n.draDevice("gpu-"+strconv.Itoa(gi)+"-mig-"+strconv.Itoa(ii), m.UUID))
		}
	}
	for pi := range r.IntN(12) {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", pi, r.Uint32())
		p := PodMeta{UID: uid, Namespace: "ns" + strconv.Itoa(r.IntN(n.nsCount+1)), Name: "pod" + strconv.Itoa(pi),
			Labels: map[string]string{"team": "forged"}}
		for ci := range 1 + r.IntN(3) {
			p.Containers = append(p.Containers, ContainerMeta{Name: "c" + strconv.Itoa(ci), ID: cid(uid, strconv.Itoa(ci))})
		}
		for ci := range r.IntN(3) {
			p.InitContainers = append(p.InitContainers, ContainerMeta{Name: "i" + strconv.Itoa(ci),
				ID: cid(uid, "i"+strconv.Itoa(ci)), Sidecar: r.IntN(2) == 0})
		}
		for ci := range ctrCount(&p) {
			n.hamiLimits(ctrMeta(&p, ci))
		}
		n.pods = append(n.pods, p)
	}
	return n
}

// draDevice is a ResourceSlice device for uuid, sometimes without its
// uuid or naming a device this node does not have.
func (n *randomNode) draDevice(name, uuid string) DRADevice {
	d := DRADevice{Driver: "gpu.nvidia.com", Pool: "pool", Name: name, Attributes: map[string]string{"uuid": uuid}}
	switch n.r.IntN(10) {
	case 0:
		delete(d.Attributes, "uuid")
	case 1:
		d.Attributes["uuid"] = gpuID(888888)
	}
	return d
}

// claim picks a DRA claim device, sometimes of another driver or unknown.
func (n *randomNode) claim() ClaimDevice {
	r := n.r
	cd := ClaimDevice{ClaimNamespace: "ns0", ClaimName: "claim" + strconv.Itoa(r.IntN(4)), Driver: "gpu.nvidia.com", Pool: "pool"}
	switch r.IntN(8) {
	case 0:
		cd.Driver, cd.Device = "net.example.com", "eth0"
	case 1:
		cd.Device = "gpu-" + strconv.Itoa(90+r.IntN(3))
	default:
		cd.Device = n.dra[r.IntN(len(n.dra))].Name
	}
	return cd
}

// gkeID picks a GKE device ID, sometimes naming nothing on this node.
func (n *randomNode) gkeID() string {
	r := n.r
	gi := r.IntN(len(n.gpus))
	g := n.gpus[gi]
	s := "nvidia" + strconv.Itoa(g.Minor)
	if g.MIGEnabled && len(g.MIG) > 0 && r.IntN(3) != 0 {
		id := g.MIG[r.IntN(len(g.MIG))].GPUInstanceID
		if r.IntN(6) == 0 {
			id += 50 // no such instance
		}
		s += "/gi" + strconv.Itoa(id)
	}
	if r.IntN(2) == 0 {
		s += "/vgpu" + strconv.Itoa(r.IntN(5))
	}
	if r.IntN(15) == 0 {
		s += "0/x"
	}
	return s
}

// deviceID picks a device ID, sometimes garbage or unknown.
func (n *randomNode) deviceID() string {
	r := n.r
	g := n.gpus[r.IntN(len(n.gpus))]
	if r.IntN(6) == 0 {
		return n.gkeID()
	}
	switch k := r.IntN(12); {
	case k == 0:
		return "garbage-" + strconv.Itoa(r.IntN(5))
	case k == 1:
		return gpuID(999999)
	case g.MIGEnabled && len(g.MIG) > 0:
		m := g.MIG[r.IntN(len(g.MIG))]
		switch r.IntN(3) {
		case 0:
			return m.UUID
		case 1:
			return m.UUID + "::" + strconv.Itoa(r.IntN(4))
		}
		return "MIG-" + g.UUID + "/" + strconv.Itoa(m.GPUInstanceID) + "/0"
	case k < 5:
		return g.UUID
	case k < 9:
		return g.UUID + "::" + strconv.Itoa(r.IntN(6))
	}
	return g.UUID + "-" + strconv.Itoa(r.IntN(4))
}

func (n *randomNode) pct() float64 {
	switch n.r.IntN(40) {
	case 0:
		return math.NaN()
	case 1:
		return 250
	case 2:
		return -5
	}
	return float64(n.r.IntN(101))
}

// observe builds the observation of (prev, now].
func (n *randomNode) observe(prev, now time.Time) Observation {
	r := n.r
	o := Observation{Node: "rnd", Prev: prev, Time: now, Metadata: Metadata{
		NodeLabels: map[string]string{}, Namespaces: map[string]map[string]string{}}}
	switch r.IntN(4) {
	case 0:
		o.Metadata.NodeLabels[LabelSharingStrategy] = "mps"
	case 1:
		o.Metadata.NodeLabels[LabelSharingStrategy] = "time-slicing"
	}
	switch r.IntN(3) {
	case 0:
		o.Metadata.NodeLabels[LabelReplicas] = strconv.Itoa(r.IntN(8))
	case 1:
		o.Metadata.NodeLabels[LabelReplicas] = "x"
	}
	if r.IntN(3) == 0 {
		o.Metadata.NodeLabels[LabelGKEMaxClients] = strconv.Itoa(r.IntN(6))
		o.Metadata.NodeLabels[LabelGKESharingStrategy] = []string{"time-sharing", "mps", ""}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		o.Metadata.NodeLabels["nvidia.com/mig-1g.10gb.replicas"] = strconv.Itoa(r.IntN(5))
	}
	if r.IntN(5) != 0 {
		o.Metadata.DRADevices = n.dra
	}
	for i := range n.nsCount {
		if r.IntN(2) == 0 {
			o.Metadata.Namespaces["ns"+strconv.Itoa(i)] = map[string]string{"team": "t" + strconv.Itoa(i)}
		}
	}
	if r.IntN(15) == 0 {
		o.Degraded = map[string]bool{"nvml": true}
	}
	w := max(now.Sub(prev), 0)
	for gi, g := range n.gpus {
		if r.IntN(20) == 0 || o.Degraded["nvml"] {
			continue // GPU missing from this cycle
		}
		n.energy[gi] += uint64(r.IntN(400_000))
		if r.IntN(50) == 0 {
			n.energy[gi] /= 2 // counter reset
		}
		g.EnergyMilliJoules, g.EnergyOK = n.energy[gi], r.IntN(8) != 0
		if g.MIGEnabled {
			g.MIG = append([]MIGInstance(nil), g.MIG...)
			for ii := range g.MIG {
				if r.IntN(5) != 0 {
					g.MIG[ii].DCGM = &DCGMValues{GrEngineActive: n.pct() / 100}
				}
			}
		} else {
			if r.IntN(3) != 0 {
				g.SamplePeriod = time.Duration(1+r.IntN(1000)) * time.Millisecond
			}
			g.DeviceSamplesOK = r.IntN(5) != 0
			if g.DeviceSamplesOK && w > 0 {
				for range r.IntN(30) {
					g.DeviceSamples = append(g.DeviceSamples, UtilSample{At: n.at(prev, now), Percent: n.pct()})
				}
			}
			if r.IntN(3) == 0 {
				g.DCGM = &DCGMValues{GrEngineActive: n.pct() / 100}
			}
		}
		o.GPUs = append(o.GPUs, g)
	}
	for _, p := range n.pods {
		if r.IntN(6) == 0 {
			continue // pod gone this cycle
		}
		p.StartTime = time.Time{}
		switch r.IntN(4) {
		case 0:
			p.StartTime = prev.Add(time.Duration(r.Int64N(int64(w) + 1)))
		case 1:
			p.StartTime = now.Add(time.Second)
		case 2:
			p.StartTime = prev.Add(-time.Hour)
		}
		if r.IntN(2) == 0 {
			// HAMi 2.9+ (init containers first), older HAMi, or a count
			// that fits neither; it changes from cycle to cycle, as a
			// tenant's edits would.
			entries := []int{ctrCount(&p), len(p.Containers), 1 + r.IntN(4)}[r.IntN(3)]
			p.Annotations = map[string]string{HAMiAnnotation: n.hamiAnnotation(entries)}
		}
		o.Metadata.Pods = append(o.Metadata.Pods, p)
		for ci := range ctrCount(&p) {
			if r.IntN(3) == 0 {
				continue
			}
			c := ctrMeta(&p, ci)
			a := Allocation{Namespace: p.Namespace, Pod: p.Name, Container: c.Name,
				Resource: []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.shared"}[r.IntN(4)]}
			if r.IntN(4) == 0 {
				a.Resource = ""
				for range 1 + r.IntN(3) {
					a.Claims = append(a.Claims, n.claim())
				}
			} else {
				for range 1 + r.IntN(3) {
					a.DeviceIDs = append(a.DeviceIDs, n.deviceID())
				}
			}
			o.Allocations = append(o.Allocations, a)
		}
	}
	pid := uint32(1)
	for range r.IntN(20) {
		g := n.gpus[r.IntN(len(n.gpus))]
		dev := g.UUID
		if g.MIGEnabled && len(g.MIG) > 0 && r.IntN(4) != 0 {
			dev = g.MIG[r.IntN(len(g.MIG))].UUID
		}
		pr := Process{PID: pid, GPU: g.UUID, Device: dev, MemoryMiB: uint64(r.IntN(4096))}
		pid += uint32(1 + r.IntN(3))
		switch k := r.IntN(10); {
		case k == 0:
			pr.Owner = Owner{Resolved: false}
		case k == 1:
			pr.Owner = Owner{Resolved: true, Comm: "nvidia-cuda-mps-server"}
		case k == 2:
			pr.Owner = Owner{Resolved: true, Comm: "Xorg"}
		case k == 3 || len(n.pods) == 0:
			pr.Owner = Owner{Resolved: true, PodUID: "unknown-pod", ContainerID: "x"}
		default:
			p := n.pods[r.IntN(len(n.pods))]
			c := ctrMeta(&p, r.IntN(ctrCount(&p)))
			pr.Owner = Owner{Resolved: true, PodUID: p.UID, ContainerID: c.ID}
		}
		if r.IntN(10) != 0 {
			o.Processes = append(o.Processes, pr)
		}
		if w > 0 {
			for range r.IntN(8) {
				o.Samples = append(o.Samples, ProcessSample{GPU: g.UUID, PID: pr.PID, At: n.at(prev, now), SMUtil: n.pct()})
			}
		}
	}
	return o
}

// at picks a sample time, usually on a 100 ms grid inside the window.
func (n *randomNode) at(prev, now time.Time) time.Time {
	w := max(now.Sub(prev), 0)
	if n.r.IntN(30) == 0 {
		return prev.Add(-time.Duration(n.r.Int64N(int64(time.Hour))))
	}
	steps := int64(w/(100*time.Millisecond)) + 1
	return prev.Add(time.Duration(n.r.Int64N(steps)) * 100 * time.Millisecond)
}

func (n *randomNode) hamiAnnotation(containers int) string {
	r := n.r
	if r.IntN(8) == 0 {
		return "garbage;;"
	}
	s := ""
	for range containers {
		for range r.IntN(3) {
			// Sometimes a GPU this node does not have (a tenant's edit),
			// sometimes no core limit (a memory share only).
			uuid, cores := n.gpus[r.IntN(len(n.gpus))].UUID, r.IntN(101)
			if r.IntN(4) == 0 {
				uuid = gpuID(999000 + r.IntN(3))
			}
			if r.IntN(3) == 0 {
				cores = 0
			}
			s += uuid + ",NVIDIA," + strconv.Itoa(r.IntN(90000)) + "," + strconv.Itoa(cores) + ":"
		}
		s += ";"
	}
	return s
}

// hamiLimits gives a container HAMi limits from its pod spec, or none
// known; gpucores is often absent (no core limit).
func (n *randomNode) hamiLimits(c *ContainerMeta) {
	r := n.r
	if r.IntN(2) == 0 {
		return
	}
	c.LimitsKnown, c.Limits = true, map[string]string{}
	if r.IntN(2) == 0 {
		c.Limits[ResourceGPU] = strconv.Itoa(1 + r.IntN(2))
	}
	if r.IntN(2) == 0 {
		c.Limits[HAMiResourceCores] = strconv.Itoa(r.IntN(101))
	}
	switch r.IntN(3) {
	case 0:
		c.Limits[HAMiResourceMem] = strconv.Itoa(r.IntN(90000))
	case 1:
		c.Limits[HAMiResourceMemPercentage] = strconv.Itoa(r.IntN(101))
	}
}

// ledgerCheck accumulates what the rows must add up to.
type ledgerCheck struct {
	cover, energy map[string]float64 // per GPU: cycle seconds, cycle joules
	rowCover      map[string]float64
	rowEnergy     map[string]float64
}

func (lc *ledgerCheck) rows(t *testing.T, rows []Row, l time.Duration) {
	t.Helper()
	type set struct {
		gpu        string
		start, end time.Time
	}
	sums := map[set]*rowSum{}
	var order []set
	for _, r := range rows {
		k := set{r.GPUUUID, r.IntervalStart, r.IntervalEnd}
		if sums[k] == nil {
			sums[k] = &rowSum{}
			order = append(order, k)
			if !r.IntervalEnd.After(r.IntervalStart) || epochInterval(r.IntervalStart, l) != epochInterval(r.IntervalEnd.Add(-1), l) {
				t.Errorf("row span %v..%v not inside one %v interval", r.IntervalStart, r.IntervalEnd, l)
			}
		}
		for _, v := range []float64{r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.EnergyJoules, r.MemoryMiBSeconds} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("bad value in row %+v", r)
			}
		}
		s := sums[k]
		s.alloc += r.AllocatedGPUSeconds
		s.used += r.UsedGPUSeconds
		s.energy += r.EnergyJoules
		if r.Kind == KindUnallocated {
			s.unalloc++
		}
	}
	for _, k := range order {
		s := sums[k]
		d := k.end.Sub(k.start).Seconds()
		if math.Abs(s.alloc-d) > 1e-6*d || math.Abs(s.used-d) > 1e-6*d {
			t.Errorf("GPU %s %v..%v: allocated %v used %v, want %v", k.gpu, k.start, k.end, s.alloc, s.used, d)
		}
		if s.unalloc != 1 {
			t.Errorf("GPU %s %v: %v unallocated rows", k.gpu, k.start, s.unalloc)
		}
		lc.rowCover[k.gpu] += d
		lc.rowEnergy[k.gpu] += s.energy
	}
}

func TestPropertyPartitions(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 42))
		n := newRandomNode(r)
		l := time.Duration(1+r.IntN(120)) * time.Second
		e := NewEngine(Config{LedgerInterval: l, IdleWindow: time.Duration(1+r.IntN(300)) * time.Second,
			NoisyWindow: time.Duration(1+r.IntN(60)) * time.Second})
		lc := &ledgerCheck{cover: map[string]float64{}, energy: map[string]float64{},
			rowCover: map[string]float64{}, rowEnergy: map[string]float64{}}
		now := t0.Add(time.Duration(r.Int64N(int64(time.Hour))))
		prevOK := map[string]uint64{}
		lastTime := time.Time{}
		for range 20 + r.IntN(40) {
			prev := now
			if r.IntN(15) == 0 {
				prev = now.Add(time.Duration(r.Int64N(int64(time.Minute)))) // a gap
			}
			now = prev.Add(time.Duration(r.Int64N(int64(90 * time.Second))))
			obs := n.observe(prev, now)
			res := e.Observe(obs)
			checkCycle(t, res)
			ctrs := 0
			for i := range n.pods {
				ctrs += ctrCount(&n.pods[i])
			}
			if len(e.pins) > ctrs {
				t.Fatalf("seed %d: %d pins for %d containers: pins must be dropped with their pods", seed, len(e.pins), ctrs)
			}
			// Energy: the counter delta where both ends were read on
			// adjacent cycles (0 when it went backwards).
			contiguous := !lastTime.IsZero() && prev.Equal(lastTime) && now.After(prev)
			for _, g := range obs.GPUs {
				want := 0.0
				if base, ok := prevOK[g.UUID]; ok && contiguous && g.EnergyOK && g.EnergyMilliJoules >= base {
					want = float64(g.EnergyMilliJoules-base) / 1000
				}
				if got := gpuOf(t, res, g.UUID).EnergyJoules; !near(got, want) {
					t.Fatalf("seed %d: GPU %s energy %v, want %v", seed, g.UUID, got, want)
				}
			}
			clear(prevOK)
			for _, g := range obs.GPUs {
				if g.EnergyOK {
					prevOK[g.UUID] = g.EnergyMilliJoules
				}
			}
			lastTime = now
			for _, g := range res.GPUs {
				lc.cover[g.UUID] += g.Capacity
				lc.energy[g.UUID] += g.EnergyJoules
			}
			lc.rows(t, res.Rows, l)
			if t.Failed() {
				t.Fatalf("seed %d failed", seed)
			}
		}
		lc.rows(t, e.Flush(now).Rows, l)
		for g, c := range lc.cover {
			if math.Abs(lc.rowCover[g]-c) > 1e-6*max(c, 1) || math.Abs(lc.rowEnergy[g]-lc.energy[g]) > 1e-6*max(lc.energy[g], 1) {
				t.Fatalf("seed %d GPU %s: rows cover %v s / %v J, cycles %v s / %v J", seed, g, lc.rowCover[g], lc.rowEnergy[g], c, lc.energy[g])
			}
		}
	}
}

// epochInterval is the index of the interval of length l, aligned to the
// Unix epoch, that t falls in.
func epochInterval(t time.Time, l time.Duration) int64 {
	n := t.UnixNano()
	k := n / int64(l)
	if n%int64(l) < 0 {
		k--
	}
	return k
}

// FuzzObserve drives random nodes from fuzzer-chosen seeds: the engine
// must never panic and both partitions must hold every cycle.
func FuzzObserve(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(10))
	f.Add(uint64(7), uint64(0), uint8(40))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, cycles uint8) {
		r := rand.New(rand.NewPCG(s1, s2))
		n := newRandomNode(r)
		e := NewEngine(Config{LedgerInterval: time.Duration(1+r.IntN(120)) * time.Second,
			IdleWindow: time.Duration(1+r.IntN(300)) * time.Second, NoisyWindow: time.Duration(1+r.IntN(60)) * time.Second})
		now := t0
		for range int(cycles % 64) {
			prev := now
			now = prev.Add(time.Duration(r.Int64N(int64(90*time.Second))) - time.Second)
			checkCycle(t, e.Observe(n.observe(prev, now)))
		}
		e.Flush(now)
	})
}
