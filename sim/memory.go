package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// memSegment is framebuffer held at a constant size over [from, to).
type memSegment struct {
	from, to time.Duration
	mib      uint64
}

// setMemory copies the memory intervals and checks the order memAt relies
// on (a validated scenario always has it; hand-built ones may not).
func (p *proc) setMemory(mem []scenario.MemorySegment) error {
	if len(mem) == 0 {
		return nil
	}
	p.mem = make([]memSegment, 0, len(mem))
	for i, m := range mem {
		switch {
		case m.To <= m.From:
			return fmt.Errorf("memory[%d]: to %v is not after from %v", i, m.To, m.From)
		case len(p.mem) > 0 && m.From < p.mem[len(p.mem)-1].to:
			return fmt.Errorf("memory[%d]: from %v overlaps the previous interval", i, m.From)
		}
		p.mem = append(p.mem, memSegment{m.From, m.To, m.MiB})
	}
	return nil
}

// memAt is the framebuffer the process holds at offset t: its interval's
// MiB, else memMiB. Readers move forward in time, so a cursor makes the
// usual read one comparison; a read back in time searches.
func (p *proc) memAt(t time.Duration) uint64 {
	if len(p.mem) == 0 {
		return p.memMiB // small enough to inline: most processes hold one size
	}
	return p.memAtCursor(t)
}

func (p *proc) memAtCursor(t time.Duration) uint64 {
	segs := p.mem
	c := min(p.memCur, len(segs))
	if c > 0 && segs[c-1].to > t {
		c = sort.Search(c, func(i int) bool { return segs[i].to > t })
	}
	for c < len(segs) && segs[c].to <= t {
		c++
	}
	p.memCur = c
	if c < len(segs) && segs[c].from <= t {
		return segs[c].mib
	}
	return p.memMiB
}
