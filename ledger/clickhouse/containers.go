package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpuledger/gpuledger/attribution"
)

// ContainerRows streams the deduplicated container rows whose interval
// starts in [from, to), without method or MIG profile (see ledger.Store). The
// kind is filtered on the server and the rows come in no particular order,
// so the server neither sorts nor ships the other kinds; the range is
// read in the same hour-aligned chunks as Rows.
func (s *Store) ContainerRows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	return s.inChunks(ctx, from, to, s.containerRowsIn, fn)
}

// inChunks runs read over [from, to) (zero bounds open) in hour-aligned
// chunks of about Options.RowsChunk stored rows, skipping empty hours.
func (s *Store) inChunks(ctx context.Context, from, to time.Time,
	read func(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error, fn func(attribution.Row) error) error {
	from, to = openBounds(from, to)
	if !from.Before(to) {
		return nil
	}
	chunks, err := s.rowChunks(ctx, from, to)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := read(ctx, maxTime(from, c.from), minTime(to, c.to), fn); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) containerRowsIn(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error {
	q := fmt.Sprintf(`SELECT interval_start, interval_start_ns, interval_end, interval_end_ns,
	node, gpu_uuid, gpu_model, slice_id, sharing_mode, namespace, pod, pod_uid, container, team,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, cluster
FROM %s FINAL WHERE %s AND kind = '%s'`,
		s.table(tableRows), rawRange(from, to), attribution.KindContainer)
	r := attribution.Row{Kind: attribution.KindContainer}
	var (
		start, end time.Time
		sNs, eNs   uint32
	)
	return s.query(ctx, "read container rows", q, func(rs driver.Rows) error {
		if err := rs.Scan(&start, &sNs, &end, &eNs,
			&r.Node, &r.GPUUUID, &r.GPUModel, &r.SliceID, &r.SharingMode,
			&r.Namespace, &r.Pod, &r.PodUID, &r.Container, &r.Team,
			&r.AllocatedGPUSeconds, &r.UsedGPUSeconds, &r.MemoryMiBSeconds, &r.EnergyJoules, &r.Cluster); err != nil {
			return scanError{err}
		}
		r.IntervalStart, r.IntervalEnd = joinTime(start, sNs), joinTime(end, eNs)
		return fn(r)
	})
}
