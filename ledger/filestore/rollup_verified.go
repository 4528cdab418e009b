package filestore

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// Reading a rollup by seeking its index to the period asked, without
// giving up what the walk from its first row guarantees (streamRollup).
//
// The first aggregate of a grain in a file generation walks the whole
// rollup, checking every row as before, and keeps what it saw: per slot,
// the number of rows and a digest of their checksums, in key order
// (verifiedRollup). Later aggregates of the same generation seek to their
// first slot and compare what the seek returns, slot by slot, with that
// record: a seek that an interior page's flipped key lands past rows, or
// that a leaf's flipped key sends past one, returns fewer rows (or other
// rows) for some slot than the walk saw, and the read falls back to a walk
// in the same snapshot, which finds the damage. If that walk passes and
// the seek still disagrees with it, the index sends seeks astray in a way
// the walk does not show: an error too. Every row a seek returns is still
// checked against its checksum and the key before it.
//
// A generation is what fileGen reads: the file's and its -wal's size and
// modification time and the head of the -shm's wal-index, whose change
// counter SQLite increments at every commit, by any connection of any
// process (the database header's change counter at offset 24 is not
// incremented by commits in WAL mode, and PRAGMA data_version compares
// only two readings of one connection, while reads here run on a pool).
// A raw write to the file changes its modification time. Any change drops
// the record and the next read walks again; a change that none of these
// show (a bit rotting on the disk with its time kept) is still caught by
// the comparison of each seek with the record.

// maxVerifiedSlots bounds the record of one rollup: about 15 years of
// 15-minute slots holding rows, 12 MiB. A file with more rollup slots is
// read by walking, as before.
const maxVerifiedSlots = 1 << 19

// slotDigest is what a verified walk saw of one slot's rollup rows.
type slotDigest struct {
	slot int64
	rows int64
	sum  uint64 // digestAdd over the rows' checksums, in key order
}

// digestAdd folds one row's checksum into its slot's digest; the order of
// the rows matters, as a seek returns them in key order.
func digestAdd(sum uint64, chk int64) uint64 { return (sum^uint64(chk))*0x100000001b3 + 1 }

// fileGen identifies a state of the ledger file (see above); the zero
// value matches nothing.
type fileGen struct {
	ok                     bool
	size, mtime            int64
	walSize, walMtime      int64
	walIndex               [48]byte // the -shm's first wal-index header
	walIndexOK, walPresent bool
}

// generation reads the ledger file's generation; ok is false when the
// file cannot be stat'ed (nothing is cached then).
func (s *FileStore) generation() fileGen {
	if s.genOf != nil {
		return s.genOf()
	}
	var g fileGen
	fi, err := os.Stat(s.path)
	if err != nil {
		return g
	}
	g.ok, g.size, g.mtime = true, fi.Size(), fi.ModTime().UnixNano()
	if wi, err := os.Stat(s.path + "-wal"); err == nil {
		g.walPresent, g.walSize, g.walMtime = true, wi.Size(), wi.ModTime().UnixNano()
	}
	if f, err := os.Open(s.path + "-shm"); err == nil {
		n, _ := io.ReadFull(f, g.walIndex[:])
		g.walIndexOK = n == len(g.walIndex)
		f.Close()
	}
	return g
}

// verifiedRollup is the record of one verified walk of a rollup, taken in
// generation gen. It is never changed once made.
type verifiedRollup struct {
	gen   fileGen
	slots []slotDigest // in slot order
}

// at returns the index of the first slot >= slot.
func (v *verifiedRollup) at(slot int64) int {
	lo, hi := 0, len(v.slots)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.slots[m].slot < slot {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// rollupCache holds the latest verified record of one rollup.
type rollupCache struct {
	mu sync.Mutex
	v  *verifiedRollup
	// making is the walk making a record now, if any: the reads of its
	// generation that find no record wait for it rather than walk too
	// (after each commit of a collector, every report build at once).
	making *making
	// records counts the records made, each a walk of the whole rollup,
	// and moved the seeks that disagreed with their record (tests read
	// them).
	records, moved atomic.Int64
}

// get returns the record if it was taken in generation g.
func (c *rollupCache) get(g fileGen) *verifiedRollup {
	if !g.ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v == nil || !sameGen(c.v.gen, g) {
		return nil
	}
	return c.v
}

// put keeps v as the record (replacing an older one).
func (c *rollupCache) put(v *verifiedRollup) {
	if !v.gen.ok {
		return
	}
	c.records.Add(1)
	c.mu.Lock()
	c.v = v
	c.mu.Unlock()
}

func sameGen(a, b fileGen) bool { return a.ok && b.ok && a == b }

// making is a walk in flight; done is closed when it ends, made or not.
type making struct {
	gen  fileGen
	done chan struct{}
}

// wait returns the record of generation g: at once if there is one, after
// the walk making it if one is in flight (or ctx ends first), else nil with
// release set: the caller is the walk of g, and calls release when done.
func (c *rollupCache) wait(ctx context.Context, g fileGen) (v *verifiedRollup, release func()) {
	if !g.ok {
		return nil, func() {}
	}
	c.mu.Lock()
	if c.v != nil && sameGen(c.v.gen, g) {
		c.mu.Unlock()
		return c.v, nil
	}
	if m := c.making; m != nil && sameGen(m.gen, g) {
		c.mu.Unlock()
		select {
		case <-m.done:
		case <-ctx.Done():
		}
		if v := c.get(g); v != nil {
			return v, nil
		}
		// The walk made none (damage, a cancelled read): walk too,
		// not waiting on anyone.
		return nil, func() {}
	}
	m := &making{gen: g, done: make(chan struct{})}
	c.making = m // a walk of an older generation is no longer waited on
	c.mu.Unlock()
	return nil, func() {
		c.mu.Lock()
		if c.making == m {
			c.making = nil
		}
		c.mu.Unlock()
		close(m.done)
	}
}
