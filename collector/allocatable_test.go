package collector

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// fakeAllocLister lists fixed allocations and allocatable IDs.
type fakeAllocLister struct {
	allocs   []attribution.Allocation
	ids      []string
	listErr  error
	allocErr error
	asked    [][]attribution.Allocation
}

func (f *fakeAllocLister) List(context.Context) ([]attribution.Allocation, error) {
	return f.allocs, f.listErr
}

func (f *fakeAllocLister) Allocatable(_ context.Context, allocs []attribution.Allocation) ([]string, error) {
	f.asked = append(f.asked, allocs)
	return f.ids, f.allocErr
}

// The collector hands the allocatable device IDs to attribution with this
// cycle's allocations, and does not ask when List failed.
func TestObservationCarriesAllocatableIDs(t *testing.T) {
	allocs := []attribution.Allocation{{Namespace: "a", Pod: "p", Container: "c", Resource: "nvidia.com/gpu", DeviceIDs: []string{"GPU-x::0"}}}
	pods := &fakeAllocLister{allocs: allocs, ids: []string{"GPU-x::0", "GPU-x::1", "GPU-x::2"}}
	c := New(Config{Node: "n"}, WallClock{}, Sources{Pods: pods}, nil, nil, nil, slog.New(slog.DiscardHandler))
	obs := c.observe(context.Background())
	if !reflect.DeepEqual(obs.AllocatableIDs, pods.ids) || !reflect.DeepEqual(obs.Allocations, allocs) {
		t.Errorf("observation allocatable %v allocations %v", obs.AllocatableIDs, obs.Allocations)
	}
	if len(pods.asked) != 1 || !reflect.DeepEqual(pods.asked[0], allocs) {
		t.Errorf("Allocatable asked with %v, want this cycle's allocations once", pods.asked)
	}
	// A failed read still passes what the lister has, and is counted, not
	// a degraded source.
	pods.allocErr = errors.New("unimplemented")
	obs = c.observe(context.Background())
	if obs.Degraded[SourcePodResources] || !reflect.DeepEqual(obs.AllocatableIDs, pods.ids) {
		t.Errorf("failed allocatable read: degraded %v, ids %v", obs.Degraded, obs.AllocatableIDs)
	}
	// List failing: no allocatable read.
	pods.listErr = errors.New("kubelet down")
	obs = c.observe(context.Background())
	if len(pods.asked) != 2 || obs.AllocatableIDs != nil || !obs.Degraded[SourcePodResources] {
		t.Errorf("List failed: asked %d times, ids %v, degraded %v", len(pods.asked), obs.AllocatableIDs, obs.Degraded)
	}
}
