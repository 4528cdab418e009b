package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/clickhouse"
	"github.com/gpuledger/gpuledger/ledger/outbox/shipper"
	"github.com/gpuledger/gpuledger/tenancy"
)

// The fleet load test: many nodes, each with its own outbox file and
// shipper (goroutines in one process: a process per node would spend the
// two cores on 1,250 Go runtimes and SQLite page caches instead of on the
// work measured; each outbox still has its own file, its own ClickHouse
// connections and its own writer in the rollup marks, as a node does),
// write one-minute intervals of an 8-GPU node and ship them into one real
// ClickHouse while some inserts are cut mid-way or lose their answer.

// fleetConfig sizes a fleet run.
type fleetConfig struct {
	nodes, minutes int
	// speed is virtual seconds per wall second: the writers commit a
	// node's intervals at that pace (0: as fast as they can).
	speed float64
	// commitMinutes is how many one-minute intervals a node commits at
	// once (the collector commits every closed interval: 1).
	commitMinutes int
	// nodesPerClient outboxes share one ClickHouse client (its pool of
	// connections): 18.16 accepts 1,024 connections by default, and a
	// client keeps its idle ones.
	nodesPerClient int
	ship           shipper.Options
	// faultEvery: every faultEvery-th Append of the fleet fails, half of
	// them cut by a timeout mid-way, half after the insert completed (the
	// answer lost); 0: none.
	faultEvery int
	// maxParts is the most active parts a partition of any table may
	// reach during the run.
	maxParts int
}

// Fleet knobs for the benchmark; the defaults are the always-run test's
// small fleet, so that make test stays cheap.
const (
	envNodes         = "GPULEDGER_BENCH_NODES"
	envMinutes       = "GPULEDGER_BENCH_MINUTES"
	envSpeed         = "GPULEDGER_BENCH_SPEED"
	envCommitMinutes = "GPULEDGER_BENCH_COMMIT_MINUTES"
	envPerClient     = "GPULEDGER_BENCH_NODES_PER_CLIENT"
	envMinInterval   = "GPULEDGER_BENCH_MIN_INTERVAL"
	envWakeJitter    = "GPULEDGER_BENCH_WAKE_JITTER"
)

// smallFleet is 50 nodes × 60 minutes (400 GPUs), the hour sped up 360
// times, the shippers' pace scaled down with it; each node commits two
// minutes at a time, which halves the fsyncs of 50 files on a loaded
// machine and changes nothing the test checks.
func smallFleet() fleetConfig {
	return fleetConfig{nodes: 50, minutes: 60, speed: 360, commitMinutes: 2, nodesPerClient: 1,
		ship:       shipper.Options{MinInterval: 500 * time.Millisecond, WakeJitter: 300 * time.Millisecond},
		faultEvery: 40, maxParts: 150}
}

func fleetFromEnv(tb testing.TB) fleetConfig {
	cfg := smallFleet()
	ints := map[string]*int{envNodes: &cfg.nodes, envMinutes: &cfg.minutes, envCommitMinutes: &cfg.commitMinutes, envPerClient: &cfg.nodesPerClient}
	for name, p := range ints {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1_000_000 {
				tb.Fatalf("%s=%q: want a whole number from 1 to 1000000", name, v)
			}
			*p = n
		}
	}
	if v := os.Getenv(envSpeed); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1e6 {
			tb.Fatalf("%s=%q: want virtual seconds per second from 0 (unpaced) to 1e6", envSpeed, v)
		}
		cfg.speed = f
	}
	durs := map[string]*time.Duration{envMinInterval: &cfg.ship.MinInterval, envWakeJitter: &cfg.ship.WakeJitter}
	for name, p := range durs {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Hour {
				tb.Fatalf("%s=%q: want a duration from 0 to 1h", name, v)
			}
			*p = d
		}
	}
	return cfg
}

// fleetDay is the first interval's start: a day in the past, whole, so
// every hour is inside one monthly partition.
var fleetDay = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

const gpusPerNode = 8

// nodeMinute returns the rows the collector writes for one minute of node
// n: on each of its 8 GPUs a container holding the whole GPU, then the
// three residual rows attribution.IntervalRows always emits (unallocated,
// unattributed, idle); one GPU in eight is held by nobody (its residual
// rows only). Values are multiples of 1/64, so sums are exact in any
// order, and each GPU's rows close both partitions at 60 s.
func nodeMinute(n, m int) []attribution.Row {
	is := fleetDay.Add(time.Duration(m) * time.Minute)
	node := fmt.Sprintf("node-%04d", n)
	rows := make([]attribution.Row, 0, 4*gpusPerNode)
	for g := range gpusPerNode {
		uuid := fmt.Sprintf("GPU-%04d-%d", n, g)
		base := attribution.Row{IntervalStart: is, IntervalEnd: is.Add(time.Minute), Node: node, GPUUUID: uuid,
			GPUModel: "H100-SXM5-80GB", SliceID: uuid, SharingMode: string(tenancy.Exclusive), Method: attribution.MethodMeasured}
		held := (n+g)%gpusPerNode != 7
		used := float64((n*31+g*7+m*13)%3800) / 64 // under 59.4 s
		un, ua, id := base, base, base
		un.Kind, ua.Kind, id.Kind = attribution.KindUnallocated, attribution.KindUnattributed, attribution.KindIdle
		if held {
			c := base
			c.Kind, c.Namespace, c.Pod, c.PodUID, c.Container = attribution.KindContainer, fmt.Sprintf("team-%d", n%20), fmt.Sprintf("train-%d-%d", n, g), fmt.Sprintf("uid-%d-%d", n, g), "main"
			c.Team = c.Namespace
			c.AllocatedGPUSeconds, c.UsedGPUSeconds = 60, used
			c.MemoryMiBSeconds, c.EnergyJoules = float64(40960*60), float64((m%64)*512)/64
			rows = append(rows, c)
			ua.UsedGPUSeconds = 0.5
			id.UsedGPUSeconds = 60 - used - 0.5
		} else {
			un.AllocatedGPUSeconds = 60
			id.UsedGPUSeconds = 60
		}
		id.EnergyJoules = 3000
		rows = append(rows, un, ua, id)
	}
	return rows
}

// faultyRemote is the real ClickHouse store with some Appends failing the
// two ways a network does: cut mid-way (a timeout), or done but
// unanswered. The shipper must retry both, and the second leaves a second
// copy of the batch that the table's key collapses.
type faultyRemote struct {
	ledger.Store
	rb     ledger.RollupBuilder
	calls  *atomic.Int64
	every  int64
	cut    *atomic.Int64
	unsure *atomic.Int64
	resent *atomic.Int64 // rows of failed Appends, sent again by the shipper
}

// Close leaves the client open: outboxes share it, and runFleet closes it.
func (f faultyRemote) Close() error { return nil }

func (f faultyRemote) RebuildRollups(ctx context.Context, from, to time.Time) error {
	return f.rb.RebuildRollups(ctx, from, to)
}

func (f faultyRemote) Append(ctx context.Context, rows []attribution.Row, fs []attribution.Finding) error {
	n := f.calls.Add(1)
	switch {
	case f.every == 0 || n%f.every != 0:
		return f.Store.Append(ctx, rows, fs)
	case (n/f.every)%2 == 0:
		// Cut within the insert: some of its blocks may be stored.
		cctx, cancel := context.WithTimeout(ctx, time.Duration(rand.N(20_000))*time.Microsecond)
		defer cancel()
		err := f.Store.Append(cctx, rows, fs)
		f.cut.Add(1)
		f.resent.Add(int64(len(rows)))
		if err == nil {
			return errors.New("injected: the insert finished as it timed out; the answer is lost")
		}
		return fmt.Errorf("injected timeout: %w", err)
	default:
		if err := f.Store.Append(ctx, rows, fs); err != nil {
			return err
		}
		f.unsure.Add(1)
		f.resent.Add(int64(len(rows)))
		return errors.New("injected: the connection dropped after the insert, before its answer")
	}
}

// fleetResult is what a run measured.
type fleetResult struct {
	rows                 int64
	wall                 time.Duration
	rowsPerSec           float64
	peakRowsPerSec       float64        // the fastest 10 s of arrivals in ledger_rows
	maxParts, finalParts map[string]int // most active parts in one partition, per table
	rawRows              uint64         // ledger_rows before deduplication
	cut, unsure, appends int64
	resent               int64         // rows sent again after a cut or unanswered insert
	cpu, serverCPU       time.Duration // the test process's (outboxes, shippers) and ClickHouse's
	load1                string
}

func (r fleetResult) String() string {
	return fmt.Sprintf("%d rows in %v (%.0f rows/s end to end, %.0f in the fastest 10 s); most active parts in a partition during the run %v, after %v; "+
		"%d Appends, %d cut mid-way, %d answers lost, %d rows sent again; ledger_rows before FINAL %d; CPU: test process %v, ClickHouse %v; load average %s",
		r.rows, r.wall.Round(time.Millisecond), r.rowsPerSec, r.peakRowsPerSec, r.maxParts, r.finalParts, r.appends, r.cut, r.unsure, r.resent, r.rawRows,
		r.cpu.Round(time.Millisecond), r.serverCPU.Round(time.Millisecond), r.load1)
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the harness's ClickHouse server's CPU time (0 for an
// external server).
func serverCPU() time.Duration {
	srv := harness.Local()
	if srv == nil {
		return 0
	}
	d, _ := srv.CPUTime()
	return d
}

// runFleet runs cfg against a fresh database and checks that ClickHouse
// holds every row once, with every GPU's minute closing at 60 s.
func runFleet(tb testing.TB, cfg fleetConfig) fleetResult {
	tb.Helper()
	ctx := context.Background()
	dsn := migrated(tb)
	d, err := ledger.ParseDSN(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	copts, err := chgo.ParseDSN(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	copts.ReadTimeout = 10 * time.Minute
	conn, err := chgo.Open(copts)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	db := copts.Auth.Database

	var calls, cut, unsure, resent atomic.Int64
	dir := tb.TempDir()
	outs := make([]*Outbox, cfg.nodes)
	var clients []*clickhouse.Store
	defer func() {
		// The outboxes stop their shippers before the clients they share close.
		for _, o := range outs {
			if o != nil {
				o.Close()
			}
		}
		for _, c := range clients {
			c.Close()
		}
	}()
	so := cfg.ship
	so.BatchSize, so.RetryBase, so.RetryMax = 10000, 50*time.Millisecond, 2*time.Second
	// The rollups are not the shipping's load: their hours never close on
	// the shippers' clock, and the day's rollups are built once at the end.
	so.Now = func() time.Time { return fleetDay }
	// Injected failures log a warning each; the counts are the result.
	quiet := slog.New(slog.DiscardHandler)
	var st *clickhouse.Store
	for n := range outs {
		if n%cfg.nodesPerClient == 0 {
			if st, err = clickhouse.Open(ctx, d, clickhouse.Options{Writer: fmt.Sprintf("client-%04d", n/cfg.nodesPerClient), MaxRetries: 2, Logger: quiet,
				RetryBase: 50 * time.Millisecond, RetryMax: time.Second}); err != nil {
				tb.Fatalf("node %d: %v", n, err)
			}
			clients = append(clients, st)
		}
		remote := faultyRemote{Store: st, rb: st, calls: &calls, every: int64(cfg.faultEvery), cut: &cut, unsure: &unsure, resent: &resent}
		outs[n], err = Open(ctx, Options{Path: filepath.Join(dir, fmt.Sprintf("node-%04d.db", n)), Remote: remote,
			Retention: time.Hour, PruneEvery: time.Minute, Shipper: so, Logger: quiet})
		if err != nil {
			tb.Fatalf("node %d: %v", n, err)
		}
	}

	// Parts per partition, sampled every second while the fleet runs.
	maxParts := map[string]int{}
	type point struct {
		at   time.Time
		rows uint64
	}
	var points []point // ledger_rows' active rows over time
	sample := func() (map[string]int, error) {
		got := map[string]int{}
		rs, err := conn.Query(ctx, "SELECT table, partition, count() FROM system.parts WHERE database = '"+db+"' AND active GROUP BY table, partition")
		if err != nil {
			return nil, fmt.Errorf("cannot read system.parts: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			var table, part string
			var c uint64
			if err := rs.Scan(&table, &part, &c); err != nil {
				return nil, err
			}
			got[table] = max(got[table], int(c))
		}
		return got, rs.Err()
	}
	stopSampling := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			got, err := sample()
			if err != nil {
				sampled <- err
				return
			}
			for k, v := range got {
				maxParts[k] = max(maxParts[k], v)
			}
			var rows uint64
			if err := conn.QueryRow(ctx, "SELECT sum(rows) FROM system.parts WHERE database = '"+db+"' AND table = 'ledger_rows' AND active").Scan(&rows); err != nil {
				sampled <- fmt.Errorf("cannot read system.parts: %w", err)
				return
			}
			points = append(points, point{time.Now(), rows})
			select {
			case <-stopSampling:
				sampled <- nil
				return
			case <-t.C:
			}
		}
	}()

	cpu0, srv0 := processCPU(), serverCPU()
	start := time.Now()
	var wg sync.WaitGroup
	writeErrs := make(chan error, cfg.nodes)
	for n, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := 0; m < cfg.minutes; m += cfg.commitMinutes {
				if cfg.speed > 0 {
					// Commit when the virtual clock passes the last interval's end.
					due := start.Add(time.Duration(float64(time.Minute) * float64(min(m+cfg.commitMinutes, cfg.minutes)) / cfg.speed))
					time.Sleep(time.Until(due))
				}
				var rows []attribution.Row
				for k := m; k < min(m+cfg.commitMinutes, cfg.minutes); k++ {
					rows = append(rows, nodeMinute(n, k)...)
				}
				if err := o.Write(ctx, rows, nil); err != nil {
					writeErrs <- fmt.Errorf("node %d minute %d: %w", n, m, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	written := time.Since(start)
	close(writeErrs)
	for err := range writeErrs {
		tb.Fatal(err)
	}
	want := int64(0)
	for n := range cfg.nodes {
		want += int64(len(nodeMinute(n, 0)) * cfg.minutes)
	}
	// Shipped: every outbox has nothing pending. Bounded by the pace of
	// the slowest shipper plus generous room for a loaded machine.
	deadline := time.Now().Add(5*time.Minute + 100*cfg.ship.MinInterval)
	for {
		pending := int64(0)
		for _, o := range outs {
			p, _, err := o.Store().OutboxStats(ctx, Sink)
			if err != nil {
				tb.Fatal(err)
			}
			pending += p
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not shipped after %v: %d rows pending in the outboxes", time.Since(start), pending)
		}
		time.Sleep(time.Second)
	}
	res := fleetResult{rows: want, wall: time.Since(start), maxParts: maxParts, cut: cut.Load(), unsure: unsure.Load(), appends: calls.Load(),
		resent: resent.Load(), cpu: processCPU() - cpu0, serverCPU: serverCPU() - srv0}
	res.rowsPerSec = float64(want) / res.wall.Seconds()
	close(stopSampling)
	if err := <-sampled; err != nil {
		tb.Fatal(err)
	}
	// The fastest 10 s of arrivals.
	for i, j := 0, 0; j < len(points); j++ {
		for points[j].at.Sub(points[i].at) > 10*time.Second {
			i++
		}
		if d := points[j].at.Sub(points[i].at); d >= 5*time.Second && points[j].rows > points[i].rows {
			res.peakRowsPerSec = max(res.peakRowsPerSec, float64(points[j].rows-points[i].rows)/d.Seconds())
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.load1 = string(b[:min(len(b), 14)])
	}
	tb.Logf("writers done after %v", written.Round(time.Millisecond))
	if res.finalParts, err = sample(); err != nil {
		tb.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".ledger_rows").Scan(&res.rawRows); err != nil {
		tb.Fatal(err)
	}

	// Every row once, every GPU's minute closing at 60 s on both
	// partitions, hour by hour (a day of 10,000 GPUs in one GROUP BY
	// would be 14.4 million groups).
	var gotRows, groups, bad uint64
	for h := fleetDay; h.Before(fleetDay.Add(time.Duration(cfg.minutes) * time.Minute)); h = h.Add(time.Hour) {
		var c, g, b uint64
		err := conn.QueryRow(ctx, `SELECT sum(c), count(), countIf(a != 60 OR u != 60 OR (c != 4 AND c != 3))
			FROM (SELECT gpu_uuid, interval_start, count() AS c, sum(allocated_gpu_seconds) AS a, sum(used_gpu_seconds) AS u
				FROM `+db+`.ledger_rows FINAL WHERE toStartOfHour(interval_start) = toDateTime(`+strconv.FormatInt(h.Unix(), 10)+`)
				GROUP BY gpu_uuid, interval_start)`).Scan(&c, &g, &b)
		if err != nil {
			tb.Fatal(err)
		}
		gotRows, groups, bad = gotRows+c, groups+g, bad+b
	}
	if int64(gotRows) != want {
		tb.Errorf("ClickHouse holds %d rows after FINAL, the fleet wrote %d", gotRows, want)
	}
	if wantGroups := uint64(cfg.nodes * gpusPerNode * cfg.minutes); groups != wantGroups {
		tb.Errorf("ClickHouse has %d GPU-minutes, want %d (%d nodes × 8 GPUs × %d minutes)", groups, wantGroups, cfg.nodes, cfg.minutes)
	}
	if bad != 0 {
		tb.Errorf("%d GPU-minutes do not close at 60 s held and 60 s used (or have a row too many or too few)", bad)
	}
	// The used seconds the fleet wrote, summed from the scenario's rows.
	var wantUsed, gotUsed float64
	for n := range cfg.nodes {
		for m := range cfg.minutes {
			for _, r := range nodeMinute(n, m) {
				wantUsed += r.UsedGPUSeconds
			}
		}
	}
	if err := conn.QueryRow(ctx, "SELECT sum(used_gpu_seconds) FROM "+db+".ledger_rows FINAL").Scan(&gotUsed); err != nil {
		tb.Fatal(err)
	}
	if gotUsed != wantUsed {
		tb.Errorf("used GPU-seconds in ClickHouse %v, written %v", gotUsed, wantUsed)
	}
	if cfg.faultEvery > 0 && (res.cut == 0 || res.unsure == 0) {
		tb.Errorf("faults injected: %d cut, %d unanswered; want some of each", res.cut, res.unsure)
	}
	for table, n := range maxParts {
		if n > cfg.maxParts {
			tb.Errorf("%s reached %d active parts in one partition during the run, want at most %d", table, n, cfg.maxParts)
		}
	}
	if maxParts["ledger_rows"] == 0 {
		tb.Error("system.parts never showed a part of ledger_rows: the sampling saw nothing")
	}

	// The day's rollups, built once, as the shippers would hour by hour.
	rb := time.Now()
	if err := st.RebuildRollups(ctx, fleetDay, fleetDay.Add(time.Duration(cfg.minutes)*time.Minute)); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("rollups of the %d hours rebuilt in %v", (cfg.minutes+59)/60, time.Since(rb).Round(time.Millisecond))
	tb.Logf("fleet of %d nodes (%d GPUs) × %d minutes: %v", cfg.nodes, cfg.nodes*gpusPerNode, cfg.minutes, res)
	return res
}

// TestFleetShipsEveryRowOnce: 50 outboxes (400 GPUs) × 60 one-minute
// intervals shipped at once into one ClickHouse, one Append in 40 cut
// mid-way or unanswered: every row is there once after FINAL, every GPU's
// minute closes at 60 s, and no partition passes 150 active parts (18.16's
// parts_to_delay_insert, where it starts slowing inserts down).
func TestFleetShipsEveryRowOnce(t *testing.T) {
	harness.Require(t)
	runFleet(t, smallFleet())
}

// BenchmarkFleetShipping is the fleet load test at the size the
// GPULEDGER_BENCH_* knobs set (default: the always-run test's), e.g. for
// 10,000 GPUs, a day at the shippers' default pace:
//
//	GPULEDGER_BENCH_NODES=1250 GPULEDGER_BENCH_MINUTES=1440 GPULEDGER_BENCH_SPEED=180 \
//	GPULEDGER_BENCH_COMMIT_MINUTES=10 GPULEDGER_BENCH_NODES_PER_CLIENT=5 GPULEDGER_BENCH_MIN_INTERVAL=30s GPULEDGER_BENCH_WAKE_JITTER=20s \
//	go test -run '^$' -bench FleetShipping -benchtime 1x -timeout 90m ./ledger/outbox
func BenchmarkFleetShipping(b *testing.B) {
	harness.Require(b)
	cfg := fleetFromEnv(b)
	for range b.N {
		res := runFleet(b, cfg)
		b.ReportMetric(res.rowsPerSec, "rows/s")
		b.ReportMetric(res.peakRowsPerSec, "peak-rows/s")
		b.ReportMetric(float64(res.maxParts["ledger_rows"]), "max-parts")
		b.ReportMetric(float64(res.finalParts["ledger_rows"]), "final-parts")
		b.ReportMetric(res.wall.Seconds(), "wall-s")
	}
}
