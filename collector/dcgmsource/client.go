// Package dcgmsource reads DCGM profiling fields per GPU and per MIG GPU
// instance, through a small Client interface with a go-dcgm implementation
// (embedded or remote nv-hostengine) and a simulator implementation.
package dcgmsource

import (
	"context"
	"time"
)

// Entity identifies a DCGM entity: a whole GPU (GPUInstanceID < 0) or one
// MIG GPU instance on it.
type Entity struct {
	GPUIndex      int
	GPUInstanceID int // -1 for the whole GPU
}

// Values are one entity's watched fields. Activity fields are ratios in
// 0..1 averaged over the watch's update period ending at At.
type Values struct {
	Entity         Entity
	At             time.Time
	GrEngineActive float64
	SMActive       float64
	DRAMActive     float64
	FBUsedMiB      uint64
	PowerWatts     float64
	EnergyMilliJ   uint64 // GPUs only: total energy counter
}

// Client is the project's interface over DCGM.
type Client interface {
	// Watch starts watching the profiling fields with the given update
	// period (the collector passes its poll interval).
	Watch(ctx context.Context, period time.Duration) error
	// Read returns the latest values of every GPU and GPU-instance entity.
	Read(ctx context.Context) ([]Values, error)
	Close() error
}
