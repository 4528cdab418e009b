package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/collector/dcgmsource"
)

// dcgmClient is DCGM on the simulated node: one entity per GPU and one per
// MIG GPU instance.
type dcgmClient struct {
	n *Node
}

var _ dcgmsource.Client = (*dcgmClient)(nil)

// Watch sets the update period: values are means over (now-period, now].
func (c *dcgmClient) Watch(ctx context.Context, period time.Duration) error {
	if period <= 0 {
		return fmt.Errorf("cannot watch DCGM fields: period %v is not positive", period)
	}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if c.n.closed {
		return errors.New("cannot watch DCGM fields: simulated node is closed")
	}
	c.n.dcgmPeriod = period
	return nil
}

// Read returns every GPU and GPU-instance entity's values at now. Time
// before the scenario start counts as idle.
func (c *dcgmClient) Read(ctx context.Context) ([]dcgmsource.Values, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return nil, errors.New("cannot read DCGM fields: simulated node is closed")
	case n.dcgmPeriod == 0:
		return nil, errors.New("cannot read DCGM fields: Watch was not called")
	}
	t := n.clock.offset()
	at := n.clock.Now()
	a, w := t-n.dcgmPeriod, float64(n.dcgmPeriod)
	var out []dcgmsource.Values
	for _, g := range n.gpus {
		gi := len(out) // the GPU entity comes before its instances
		out = append(out, dcgmsource.Values{})
		gv := dcgmsource.Values{Entity: dcgmsource.Entity{GPUIndex: g.index, GPUInstanceID: -1}, At: at}
		var busy float64
		if g.isMIG() {
			for _, m := range g.migs {
				r := clamp01(m.grp.busy(&n.scratch, slotDCGM, a, t, false) / w)
				busy += m.weight * r
				out = append(out, dcgmsource.Values{
					Entity: dcgmsource.Entity{GPUIndex: g.index, GPUInstanceID: m.giID}, At: at,
					GrEngineActive: r, SMActive: r, FBUsedMiB: usedMiB(m.grp.alive, t),
				})
			}
			gv.FBUsedMiB = g.usedMiB(t)
		} else {
			busy = clamp01(g.grp.busy(&n.scratch, slotDCGM, a, t, false) / w)
			gv.FBUsedMiB = usedMiB(g.grp.alive, t)
		}
		gv.GrEngineActive, gv.SMActive = busy, busy
		gv.PowerWatts = g.power(busy)
		gv.EnergyMilliJ = roundU64(g.energyMilliJ())
		out[gi] = gv
	}
	return out, nil
}

// Close is a no-op: the node owns the simulated DCGM.
func (c *dcgmClient) Close() error { return nil }

// usedMiB is the framebuffer the processes use at offset t.
func usedMiB(procs []*proc, t time.Duration) uint64 {
	var sum uint64
	for _, p := range procs {
		sum += p.memAt(t)
	}
	return sum
}

// usedMiB is the framebuffer used on the whole GPU at offset t.
func (g *gpu) usedMiB(t time.Duration) uint64 {
	if !g.isMIG() {
		return usedMiB(g.grp.alive, t)
	}
	var sum uint64
	for _, m := range g.migs {
		sum += usedMiB(m.grp.alive, t)
	}
	return sum
}
