package filestore

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
)

// ContainerRows streams the container rows whose interval starts in
// [from, to), with what a per-replica reader needs and no more (see
// Store). It fetches five columns instead of Rows' sixteen and skips the
// other kinds on the key index, before SQLite reads the table row: the
// advisor's read of a month of a 100-GPU fleet went from 26-30 s through
// Rows to about 8 s (BENCHMARKS.md, "Sharing advice").
func (s *FileStore) ContainerRows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	if err := s.checkRows(ctx); err != nil {
		return err
	}
	lo, hi := nsBound(from, math.MinInt64), nsBound(to, math.MaxInt64)
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return fmt.Errorf("cannot query container rows in %s: %w", s.path, err)
	}
	defer conn.Close()
	// The driver's rows directly: database/sql's locking and conversions
	// per row were a third of the read.
	var fnErr error // the callback's own error goes back unchanged
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver %T cannot query", dc)
		}
		chk := "0"
		if s.hasChk {
			chk = "chk"
		}
		rs, err := q.QueryContext(ctx, fmt.Sprintf(selectContainerRows, chk, s.clusterCol()), []driver.NamedValue{{Ordinal: 1, Value: lo}, {Ordinal: 2, Value: hi}, {Ordinal: 3, Value: string(attribution.KindContainer)}})
		if err != nil {
			return err
		}
		defer rs.Close()
		return s.streamContainers(ctx, rs, func(r attribution.Row) error {
			fnErr = fn(r)
			return fnErr
		})
	})
	if err != nil && err == fnErr {
		return err
	}
	if err != nil {
		return fmt.Errorf("cannot read container rows in %s: %w", s.path, s.describe(err))
	}
	return nil
}

// selectContainerRows: the columns after energy_joules only serve the
// row's checksum (%s: chk, or 0 in a file without checksums).
const selectContainerRows = `SELECT interval_start_ns, ` + containerKeySQL + `,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, method, mig_profile, %s, %s
FROM ledger_rows
WHERE interval_start_ns >= ? AND interval_start_ns < ? AND kind = ?
ORDER BY interval_start_ns`

func (s *FileStore) streamContainers(ctx context.Context, rs driver.Rows, fn func(attribution.Row) error) error {
	// A replica writes a row a minute: parse each key once and hand out
	// the same strings, so callers that keep them hold one copy.
	keys := map[string]containerKey{}
	dest := make([]driver.Value, 10)
	var r attribution.Row
	for {
		if err := rs.Next(dest); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		start, ok1 := dest[0].(int64)
		key, ok2 := dest[1].(string)
		a, ok3 := dest[2].(float64)
		u, ok4 := dest[3].(float64)
		m, ok5 := dest[4].(float64)
		e, ok6 := dest[5].(float64)
		method, ok7 := dest[6].(string)
		profile, ok8 := dest[7].(string)
		chk, ok9 := dest[8].(int64)
		cluster, ok10 := dest[9].(string)
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9 && ok10) {
			return errDamaged("container row at %v: unexpected column types %T %T %T %T %T %T %T %T %T", dest[0], dest[0], dest[1], dest[2], dest[3], dest[4], dest[5], dest[6], dest[7], dest[8])
		}
		k, ok := keys[key]
		if !ok {
			var err error
			if k, err = parseContainerKey(key); err != nil {
				return err
			}
			keys[key] = k
		}
		g, err := s.groups.key(ctx, s.w, k.grp)
		if err != nil {
			return err
		}
		r.IntervalStart, r.IntervalEnd, r.Kind = fromNS(start), fromNS(start+k.lengthNS), attribution.Kind(g.kind)
		r.Node, r.GPUUUID, r.SliceID, r.Pod, r.PodUID, r.Container = k.node, k.gpuUUID, k.sliceID, k.pod, k.podUID, k.container
		r.Cluster, r.Team, r.Namespace, r.GPUModel, r.SharingMode = g.cluster, g.team, g.namespace, g.model, g.mode
		r.AllocatedGPUSeconds, r.UsedGPUSeconds, r.MemoryMiBSeconds, r.EnergyJoules = a, u, m, e
		if chk != 0 {
			// The checksum covers the row as stored: kind 'container',
			// and the fields this read does not hand out.
			c := r
			c.Kind, c.Method, c.MIGProfile, c.Cluster = attribution.KindContainer, method, profile, cluster
			if chk != rowChecksum(&c, start, start+k.lengthNS, k.grp) || cluster != g.cluster {
				return errDamaged("container row of %s at %s fails its checksum", k.podUID, ledger.FormatTime(r.IntervalStart))
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
}
