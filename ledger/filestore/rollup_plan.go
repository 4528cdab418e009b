package filestore

import (
	"slices"

	"github.com/gpuledger/gpuledger/ledger"
)

// sums are one group's totals over some rows: a rollup row or a raw read.
type sums struct {
	grp                      int64
	alloc, used, mem, energy float64
	rows                     int64
}

// rawPiece is the part [lo, hi) of one slot that bucket holds and the
// rollup cannot answer: a slot the bucket holds only in part, or a slot
// marked dirty.
type rawPiece struct {
	bucket int
	slot   int64
	lo, hi int64
}

// slotSpan is a bucket's whole slots [lo, hi).
type slotSpan struct{ lo, hi int64 }

// slotPlan says where each bucket's slots are read from.
type slotPlan struct {
	whole []slotSpan // per bucket; rollup rows of dirty slots in them are skipped
	dirty []int64    // sorted
	raw   []rawPiece // in slot order
}

// planSlots splits contiguous, ordered buckets into whole slots and raw
// pieces. dirty must be sorted.
func planSlots(bs []bucket, dirty []int64) slotPlan {
	p := slotPlan{whole: make([]slotSpan, 0, len(bs)), dirty: dirty}
	for i, b := range bs {
		lo := slotOf(b.lo) // first whole slot
		if slotStart(lo) < b.lo {
			lo++
		}
		hi := slotOf(b.hi) // slots before it end by b.hi
		if lo > hi {       // the bucket lies inside one slot
			p.raw = append(p.raw, rawPiece{bucket: i, slot: hi, lo: b.lo, hi: b.hi})
			p.whole = append(p.whole, slotSpan{lo, lo})
			continue
		}
		if start := slotStart(lo); start > b.lo {
			p.raw = append(p.raw, rawPiece{bucket: i, slot: lo - 1, lo: b.lo, hi: start})
		}
		k, _ := slices.BinarySearch(dirty, lo)
		for ; k < len(dirty) && dirty[k] < hi; k++ {
			p.raw = append(p.raw, rawPiece{bucket: i, slot: dirty[k], lo: slotStart(dirty[k]), hi: slotEnd(dirty[k])})
		}
		if start := slotStart(hi); start < b.hi {
			p.raw = append(p.raw, rawPiece{bucket: i, slot: hi, lo: start, hi: b.hi})
		}
		p.whole = append(p.whole, slotSpan{lo, hi})
	}
	return p
}

// slotWalker maps the slots of rollup rows, read in slot order, to the
// bucket whose whole, clean slots hold them.
type slotWalker struct {
	p          *slotPlan
	span, dirt int
}

func (p *slotPlan) walker() *slotWalker { return &slotWalker{p: p} }

// bucket returns the bucket of slot s, false when the rollup must not
// answer for s (a partial or dirty slot, or outside every bucket).
func (w *slotWalker) bucket(s int64) (int, bool) {
	for w.span < len(w.p.whole) && s >= w.p.whole[w.span].hi {
		w.span++
	}
	if w.span == len(w.p.whole) || s < w.p.whole[w.span].lo {
		return 0, false
	}
	for w.dirt < len(w.p.dirty) && w.p.dirty[w.dirt] < s {
		w.dirt++
	}
	if w.dirt < len(w.p.dirty) && w.p.dirty[w.dirt] == s {
		return 0, false
	}
	return w.span, true
}

// accumulator adds a grain's rows into per bucket and group aggregates.
// Callers add in slot order, so every bucket is the same sequence of float
// additions however its slots were read.
type accumulator[K comparable, R aggRow[K]] struct {
	bs    []bucket
	fill  func(*ledger.Aggregate, K)
	index map[accKey[K]]int
	out   []ledger.Aggregate
	grps  []int64 // grps[i] is out[i]'s row group
}

type accKey[K comparable] struct {
	bucket int
	key    K
}

func newAccumulator[K comparable, R aggRow[K]](bs []bucket, fill func(*ledger.Aggregate, K)) *accumulator[K, R] {
	return &accumulator[K, R]{bs: bs, fill: fill, index: map[accKey[K]]int{}}
}

func (a *accumulator[K, R]) add(bucket int, r *R) {
	k := accKey[K]{bucket, (*r).rowKey()}
	i, ok := a.index[k]
	if !ok {
		i = len(a.out)
		a.index[k] = i
		a.out = append(a.out, ledger.Aggregate{BucketStart: a.bs[bucket].start})
		a.fill(&a.out[i], k.key)
		a.grps = append(a.grps, (*r).rowGrp())
	}
	x := &a.out[i]
	g := (*r).rowSums()
	x.AllocatedSeconds += g.alloc
	x.UsedSeconds += g.used
	x.MemoryMiBSeconds += g.mem
	x.EnergyJoules += g.energy
	x.Rows += g.rows
	// A slice's profile never changes: max() skips rows written before
	// profiles were recorded (''). Grains without one give '' throughout.
	x.MIGProfile = max(x.MIGProfile, (*r).rowProfile())
}
