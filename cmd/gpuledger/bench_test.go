package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/collector"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/sim"
	"github.com/gpuledger/gpuledger/sim/scenario"
)

// BenchmarkCycleDenseNode measures one whole collection cycle (NVML read,
// DCGM join, pod-resources List over gRPC, metadata, procfs, attribution,
// metrics snapshot) on the dense node (BENCHMARKS.md), simulated. One op is one
// simulated second: the simulator's own cost (BenchmarkAdvanceDenseNode in
// sim) is included and reported separately by sim-ns/op.
//
// The scenario comes from `make bench` (GPULEDGER_DENSE_SCENARIO), made by
// internal/groundtruth/cmd/genscenarios -dense.
func BenchmarkCycleDenseNode(b *testing.B) { benchmarkCycle(b, false) }

// BenchmarkCycleDenseNodeWithOutbox is the same cycle with every closed
// ledger interval committed to the embedded ledger (the outbox), fsync
// included: the difference is what the outbox costs a cycle.
func BenchmarkCycleDenseNodeWithOutbox(b *testing.B) { benchmarkCycle(b, true) }

func benchmarkCycle(b *testing.B, withOutbox bool) {
	path := os.Getenv("GPULEDGER_DENSE_SCENARIO")
	if path == "" {
		b.Skip("set GPULEDGER_DENSE_SCENARIO (make bench does)")
	}
	sc, err := scenario.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	node, err := sim.New(ctx, sc, sim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	exp := exposition.New(sc.Node.Name, exposition.Options{})
	var sinks []collector.Sink
	if withOutbox {
		store, err := filestore.OpenFile(ctx, filepath.Join(b.TempDir(), "ledger.db"), filestore.FileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		sinks = append(sinks, store)
	}
	c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, sinks, exp)
	if err != nil {
		b.Fatal(err)
	}
	defer closeSrc()
	t := sc.Start
	step := func() time.Duration {
		t = t.Add(sc.PollInterval)
		if t.After(sc.Start.Add(sc.Duration)) {
			b.Fatal("scenario too short for b.N; raise -dense-duration")
		}
		began := time.Now()
		if err := node.Advance(t); err != nil {
			b.Fatal(err)
		}
		simTook := time.Since(began)
		if _, err := c.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
		return simTook
	}
	for range 60 { // warm up: first cycles set baselines and grow buffers
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	var simTotal time.Duration
	for range b.N {
		simTotal += step()
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(simTotal.Nanoseconds())/float64(b.N), "sim-advance-ns/op")
	b.ReportMetric(float64(residentBytes(b))/(1<<20), "rss-MiB")
}

// processCPU is the user+system CPU time of the whole process: with the
// pod-resources gRPC server on another goroutine, wall time would hide work.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentBytes is the process's resident set size (VmRSS), simulated node
// and benchmark harness included: an upper bound for the collector alone.
func residentBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
