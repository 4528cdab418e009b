package attribution

import (
	"math"
	"slices"
	"time"
)

// ledger sums cycles into ledger rows over intervals [kL, (k+1)L) aligned
// to the Unix epoch. Each (interval, GPU) accumulates separately and
// covers only the time cycles actually covered: its rows start at the
// first cycle's start in the interval and end at the last cycle's end, so
// partial intervals (start, restart, shutdown) are shorter rows and no
// time is invented. Where a GPU's coverage breaks inside an interval (a
// gap, a GPU missing from a cycle) the rows so far are emitted and a new
// accumulation starts, which keeps both partitions exact per row set.
type ledger struct {
	l    int64 // interval length in ns
	open []*ledgerAcc
	idx  map[accKey]*ledgerAcc
	free []*ledgerAcc
}

type accKey struct {
	k   int64
	gpu string
}

// ledgerAcc is one (interval, GPU) being summed.
type ledgerAcc struct {
	key                   accKey
	start, end            int64 // the interval
	spanStart, spanEnd    int64 // what cycles covered of it
	node, model           string
	order                 int
	mode                  string // fallback mode for the non-container rows
	unalloc, unattr, idle float64
	unattrE, idleE        float64
	rows                  []rowAcc
	rowIdx                map[rowKey]int32
	// hint[i] is the row the GPU cycle's i-th container row went to last
	// time; rows come in the same order cycle after cycle, so checking it
	// first saves hashing five strings per row.
	hint []int32
}

type rowKey struct{ slice, podUID, ns, pod, container string }

func (k *rowKey) is(cc *ContainerCycle) bool {
	return k.slice == cc.SliceID && k.podUID == cc.PodUID && k.container == cc.Container &&
		k.pod == cc.Pod && k.ns == cc.Namespace
}

type rowAcc struct {
	key                     rowKey
	team, mode, profile     string
	alloc, used, memS, ener float64
	estimated               bool
}

func (l *ledger) init(interval time.Duration) {
	l.l = int64(interval)
	l.idx = map[accKey]*ledgerAcc{}
}

// add sums the cycle (prev, now] into its intervals, splitting it at
// interval boundaries in proportion to time. Accumulations whose coverage
// would break are emitted into out.
func (l *ledger) add(prev, now int64, node string, gpus []GPUCycle, modes []string, out []Row) []Row {
	span := float64(now - prev)
	for a := prev; a < now; {
		k := floorDiv(a, l.l)
		b := min((k+1)*l.l, now)
		f := float64(b-a) / span
		for gi := range gpus {
			acc := l.acc(k, a, node, &gpus[gi], gi, &out)
			acc.mode = modes[gi]
			acc.addCycle(&gpus[gi], f)
			acc.spanEnd = b
		}
		a = b
	}
	return out
}

// acc returns the accumulation of (interval k, GPU) that ends at a,
// emitting one that does not (its coverage would have a hole).
func (l *ledger) acc(k, a int64, node string, gc *GPUCycle, order int, out *[]Row) *ledgerAcc {
	key := accKey{k, gc.UUID}
	acc, ok := l.idx[key]
	if ok && acc.spanEnd == a {
		acc.model, acc.node = gc.Model, node
		return acc
	}
	if ok {
		*out = acc.emit(*out)
		l.release(acc)
	}
	acc = l.get()
	acc.key, acc.start, acc.end = key, k*l.l, (k+1)*l.l
	acc.spanStart, acc.spanEnd = a, a
	acc.node, acc.model, acc.order = node, gc.Model, order
	l.idx[key] = acc
	l.open = append(l.open, acc)
	return acc
}

func (l *ledger) get() *ledgerAcc {
	if n := len(l.free); n > 0 {
		acc := l.free[n-1]
		l.free = l.free[:n-1]
		return acc
	}
	return &ledgerAcc{rowIdx: map[rowKey]int32{}}
}

// release forgets an emitted accumulation and keeps it for reuse.
func (l *ledger) release(acc *ledgerAcc) {
	delete(l.idx, acc.key)
	if i := slices.Index(l.open, acc); i >= 0 {
		l.open = slices.Delete(l.open, i, i+1)
	}
	rows, idx, hint := acc.rows[:0], acc.rowIdx, acc.hint[:0]
	clear(idx)
	*acc = ledgerAcc{rows: rows, rowIdx: idx, hint: hint}
	l.free = append(l.free, acc)
}

func (a *ledgerAcc) addCycle(gc *GPUCycle, f float64) {
	a.unalloc += f * gc.Unallocated
	a.unattr += f * gc.Unattributed
	a.idle += f * gc.Idle
	a.unattrE += f * gc.UnattributedEnergy
	a.idleE += f * gc.IdleEnergy
	for len(a.hint) < len(gc.Containers) {
		a.hint = append(a.hint, -1)
	}
	for ci := range gc.Containers {
		cc := &gc.Containers[ci]
		ri := a.hint[ci]
		if ri < 0 || !a.rows[ri].key.is(cc) {
			k := rowKey{cc.SliceID, cc.PodUID, cc.Namespace, cc.Pod, cc.Container}
			var ok bool
			if ri, ok = a.rowIdx[k]; !ok {
				ri = int32(len(a.rows))
				a.rows = append(a.rows, rowAcc{key: k})
				a.rowIdx[k] = ri
			}
			a.hint[ci] = ri
		}
		r := &a.rows[ri]
		r.team, r.mode, r.profile = cc.Team, cc.SharingMode, cc.MIGProfile
		r.alloc += f * cc.Allocated
		r.used += f * cc.Used
		r.memS += f * cc.MemoryMiBs
		r.ener += f * cc.Energy
		r.estimated = r.estimated || cc.Method == MethodEstimated
	}
}

// closeBefore emits the accumulations of intervals that ended by now.
func (l *ledger) closeBefore(now int64, out []Row) []Row {
	return l.closeWhere(out, func(a *ledgerAcc) bool { return a.end <= now })
}

// closeAll emits every open accumulation.
func (l *ledger) closeAll(out []Row) []Row {
	return l.closeWhere(out, func(*ledgerAcc) bool { return true })
}

func (l *ledger) closeWhere(out []Row, done func(*ledgerAcc) bool) []Row {
	var ready []*ledgerAcc
	for _, a := range l.open {
		if done(a) {
			ready = append(ready, a)
		}
	}
	slices.SortStableFunc(ready, func(x, y *ledgerAcc) int {
		if x.spanStart != y.spanStart {
			return cmpInt64(x.spanStart, y.spanStart)
		}
		return x.order - y.order
	})
	for _, a := range ready {
		out = a.emit(out)
		l.release(a)
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// emit writes the accumulation's rows: container rows in the order they
// first appeared, then unallocated, unattributed and idle (always, even
// when 0, so the partitions are visible). The non-container rows carry
// the GPU's dominant mode: its container rows' mode where they agree,
// else the first row's; with no container rows, the mode the GPU's last
// cycle fell back to.
func (a *ledgerAcc) emit(out []Row) []Row {
	if a.spanEnd <= a.spanStart {
		return out
	}
	start, end := time.Unix(0, a.spanStart).UTC(), time.Unix(0, a.spanEnd).UTC()
	base := Row{IntervalStart: start, IntervalEnd: end, Node: a.node, GPUUUID: a.key.gpu, GPUModel: a.model}
	mode := a.mode
	if len(a.rows) > 0 {
		mode = a.rows[0].mode
	}
	// Exports print GPU-seconds to 6 decimals (ledger-format.md), and each
	// column of a GPU's rows must sum to the interval length as printed:
	// container rows are rounded here and the residual rows take what is
	// left, so the rounding of every container row is absorbed by them.
	d := float64(a.spanEnd-a.spanStart) / 1e9
	var sumAlloc, sumUsed float64
	bigA, bigU := -1, -1
	for i := range a.rows {
		r := &a.rows[i]
		r.alloc, r.used = roundMicro(r.alloc), roundMicro(r.used)
		sumAlloc += r.alloc
		sumUsed += r.used
		if bigA < 0 || r.alloc > a.rows[bigA].alloc {
			bigA = i
		}
		if bigU < 0 || r.used > a.rows[bigU].used {
			bigU = i
		}
	}
	unalloc := d - sumAlloc
	if unalloc < 0 && bigA >= 0 {
		// The rows rounded up past the interval: the largest gives it back.
		a.rows[bigA].alloc = max(a.rows[bigA].alloc+unalloc, 0)
		unalloc = 0
	}
	unattr := min(roundMicro(a.unattr), max(d-sumUsed, 0))
	idle := d - sumUsed - unattr
	if idle < 0 && bigU >= 0 {
		a.rows[bigU].used = max(a.rows[bigU].used+idle, 0)
		idle = 0
	}
	a.unalloc, a.unattr, a.idle = max(unalloc, 0), unattr, max(idle, 0)
	for i := range a.rows {
		r := &a.rows[i]
		row := base
		row.SliceID, row.MIGProfile, row.SharingMode, row.Kind = r.key.slice, r.profile, r.mode, KindContainer
		row.Namespace, row.Pod, row.PodUID, row.Container = r.key.ns, r.key.pod, r.key.podUID, r.key.container
		row.Team = r.team
		row.AllocatedGPUSeconds, row.UsedGPUSeconds = r.alloc, r.used
		row.MemoryMiBSeconds, row.EnergyJoules = r.memS, r.ener
		row.Method = MethodMeasured
		if r.estimated {
			row.Method = MethodEstimated
		}
		out = append(out, row)
	}
	res := base
	res.SliceID, res.SharingMode, res.Method = a.key.gpu, mode, MethodMeasured
	un := res
	un.Kind, un.AllocatedGPUSeconds = KindUnallocated, a.unalloc
	ua := res
	ua.Kind, ua.UsedGPUSeconds, ua.EnergyJoules = KindUnattributed, a.unattr, a.unattrE
	id := res
	id.Kind, id.UsedGPUSeconds, id.EnergyJoules = KindIdle, a.idle, a.idleE
	return append(out, un, ua, id)
}

// roundMicro rounds GPU-seconds to the 6 decimals the exports print.
func roundMicro(v float64) float64 {
	r := math.Round(v*1e6) / 1e6
	if r == 0 {
		return 0 // never -0
	}
	return r
}
