package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/scenario"
	"github.com/gpuledger/gpuledger/collector/sim"
)

// BenchmarkCycleDenseNode measures one whole collection cycle (NVML read,
// DCGM join, pod-resources List over gRPC, metadata, procfs, attribution,
// metrics snapshot) on the dense node of issue 2, simulated. One op is one
// simulated second: the simulator's own cost (BenchmarkAdvanceDenseNode in
// collector/sim) is included and reported separately by sim-ns/op.
//
// The scenario comes from `make bench` (GPULEDGER_DENSE_SCENARIO), made by
// internal/groundtruth/cmd/genscenarios -dense.
func BenchmarkCycleDenseNode(b *testing.B) {
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
	c, closeSrc, err := simulatedCollector(ctx, sc, node, simOptions{TeamLabel: "team"}, nil, exp)
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
	var simTotal time.Duration
	for range b.N {
		simTotal += step()
	}
	b.ReportMetric(float64(simTotal.Nanoseconds())/float64(b.N), "sim-advance-ns/op")
}
