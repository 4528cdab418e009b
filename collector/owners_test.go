package collector

import (
	"errors"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// fakeProcfs answers from a map and counts reads.
type fakeProcfs struct {
	owners map[uint32]attribution.Owner
	reads  int
}

func (f *fakeProcfs) Resolve(pid uint32) (attribution.Owner, error) {
	f.reads++
	o, ok := f.owners[pid]
	if !ok {
		return attribution.Owner{}, errors.New("no such process")
	}
	return o, nil
}

func TestOwnerCacheReadsProcfsOncePerProcess(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a", ContainerID: "ca"}}}
	c := newOwnerCache(fs)
	for range 5 {
		o, err := c.resolve(7)
		if err != nil || o.PodUID != "a" {
			t.Fatalf("resolve = %+v, %v", o, err)
		}
		c.endCycle()
	}
	if fs.reads != 1 {
		t.Errorf("procfs read %d times for one long-lived process, want 1", fs.reads)
	}
}

// A PID absent for a whole cycle is forgotten, so its reuse by another
// container resolves to the new owner.
func TestOwnerCacheForgetsPIDsThatDisappear(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a", ContainerID: "ca"}}}
	c := newOwnerCache(fs)
	if o, _ := c.resolve(7); o.PodUID != "a" {
		t.Fatalf("first owner %+v", o)
	}
	c.endCycle()
	c.endCycle() // a cycle without PID 7
	fs.owners[7] = attribution.Owner{Resolved: true, PodUID: "b", ContainerID: "cb"}
	if o, _ := c.resolve(7); o.PodUID != "b" {
		t.Errorf("reused PID resolved to %+v, want the new owner b", o)
	}
}

// A PID seen only in samples keeps the owner it had while running.
func TestOwnerCacheLookupKeepsExitedOwner(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a"}}}
	c := newOwnerCache(fs)
	c.resolve(7)
	c.endCycle()
	delete(fs.owners, 7) // exited: procfs no longer has it
	if o := c.lookup(7); o.PodUID != "a" {
		t.Errorf("exited PID owner %+v, want a", o)
	}
	if o := c.lookup(8); o.Resolved {
		t.Errorf("unknown PID resolved to %+v", o)
	}
}

// An unresolved PID is tried again next cycle rather than cached.
func TestOwnerCacheRetriesFailures(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{}}
	c := newOwnerCache(fs)
	if _, err := c.resolve(9); err == nil {
		t.Fatal("want an error for a PID procfs does not have")
	}
	c.endCycle()
	fs.owners[9] = attribution.Owner{Resolved: true, PodUID: "z"}
	if o, err := c.resolve(9); err != nil || o.PodUID != "z" {
		t.Errorf("retry gave %+v, %v", o, err)
	}
}
