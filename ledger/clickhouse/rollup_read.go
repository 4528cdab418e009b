package clickhouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// readRollup reads the rows of the given builds (period start -> header) of
// one grain in [from, to). ok[start] says the build's rows are all visible:
// a build whose rows a newer, not yet visible build replaced in a merge
// fails this check and its period is read from a finer source instead.
func (s *Store) readRollup(ctx context.Context, grain string, from, to int64, want map[int64]header) (map[int64][]group, map[int64]bool, error) {
	rows := map[int64][]group{}
	ok := map[int64]bool{}
	if len(want) == 0 {
		return rows, ok, nil
	}
	p := period{grain: grain}
	seen := map[int64]map[groupKey]bool{}
	q := fmt.Sprintf(`SELECT toUInt32(%[1]s), build, team, namespace, gpu_model, sharing_mode, kind, cluster,
	allocated_gpu_seconds, used_gpu_seconds, memory_mib_seconds, energy_joules, rows
FROM %[2]s WHERE %[1]s >= %[3]s AND %[1]s < %[4]s%[5]s`, p.column(), s.table(p.table()), dt(from), dt(to), buildFilter(want))
	err := s.query(ctx, "read rollups", q, func(rs driver.Rows) error {
		var start uint32
		var build uint64
		var g group
		if err := rs.Scan(&start, &build, &g.key.team, &g.key.namespace, &g.key.model, &g.key.mode, &g.key.kind, &g.key.cluster,
			&g.alloc, &g.used, &g.mem, &g.energy, &g.rows); err != nil {
			return scanError{err}
		}
		ps := int64(start)
		h, wanted := want[ps]
		if !wanted || h.build != build {
			return nil // an older build, or a period read elsewhere
		}
		// A retried insert can leave the same build row twice until a
		// merge; it counts once.
		if seen[ps] == nil {
			seen[ps] = map[groupKey]bool{}
		}
		if seen[ps][g.key] {
			return nil
		}
		seen[ps][g.key] = true
		rows[ps] = append(rows[ps], g)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for ps, h := range want {
		ok[ps] = uint64(len(rows[ps])) == h.groups
	}
	return rows, ok, nil
}

// maxBuildFilter bounds the builds named in one rollup read (about 22
// bytes each; max_query_size is 256 KiB by default).
const maxBuildFilter = 4000

// buildFilter keeps older builds of a period on the server until merges
// drop them: each rebuild of an hour adds a copy of its groups, and a month
// of hours rebuilt three times sent 3x the rows to be thrown away here (91
// MB, 0.4 s of a Los Angeles monthly report in the benchmark). With more
// builds than maxBuildFilter, every build is read and filtered here.
func buildFilter(want map[int64]header) string {
	if len(want) > maxBuildFilter {
		return ""
	}
	var b strings.Builder
	b.WriteString(" AND build IN (")
	first := true
	for _, h := range want {
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(strconv.FormatUint(h.build, 10))
	}
	b.WriteString(")")
	return b.String()
}

func (k groupKey) less(o groupKey) bool {
	if k.team != o.team {
		return k.team < o.team
	}
	if k.namespace != o.namespace {
		return k.namespace < o.namespace
	}
	if k.model != o.model {
		return k.model < o.model
	}
	if k.mode != o.mode {
		return k.mode < o.mode
	}
	if k.kind != o.kind {
		return k.kind < o.kind
	}
	return k.cluster < o.cluster
}
