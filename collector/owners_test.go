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

// metaWith is an observation whose metadata lists one pod per container ID.
func metaWith(ids ...string) *attribution.Observation {
	obs := &attribution.Observation{Degraded: map[string]bool{}}
	for i, id := range ids {
		obs.Metadata.Pods = append(obs.Metadata.Pods, attribution.PodMeta{UID: "pod" + string(rune('a'+i)),
			Containers: []attribution.ContainerMeta{{Name: "c", ID: id}}})
	}
	return obs
}

// A PID reused within one poll never leaves the lists. Once the metadata
// no longer lists its cached container, it is resolved again and the new
// owner gets it; while the container is listed, procfs is not read.
func TestOwnerCacheReResolvesPIDsOfGoneContainers(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{
		7: {Resolved: true, PodUID: "a", ContainerID: "ca"},
		8: {Resolved: true}, // a host process
	}}
	c := newOwnerCache(fs)
	for range 3 {
		c.retireGone(metaWith("ca", "cb"))
		if o, _ := c.resolve(7); o.PodUID != "a" {
			t.Fatalf("owner %+v, want a", o)
		}
		c.resolve(8)
		c.endCycle()
	}
	if fs.reads != 2 {
		t.Fatalf("procfs read %d times for two long-lived processes, want 2", fs.reads)
	}
	// PID 7 exits and b's process gets PID 7 before the next poll; the
	// pod of a ends.
	fs.owners[7] = attribution.Owner{Resolved: true, PodUID: "b", ContainerID: "cb"}
	c.retireGone(metaWith("cb"))
	if o, _ := c.resolve(7); o.PodUID != "b" || o.ContainerID != "cb" {
		t.Errorf("reused PID resolved to %+v, want the new owner b", o)
	}
	if o, _ := c.resolve(8); !o.IsHost() {
		t.Errorf("host process %+v", o)
	}
	c.endCycle()
	if fs.reads != 3 {
		t.Errorf("procfs read %d times, want 3 (only the reused PID again)", fs.reads)
	}
	c.retireGone(metaWith("cb"))
	c.resolve(7)
	if fs.reads != 3 {
		t.Errorf("procfs read %d times, want 3: the new owner is cached", fs.reads)
	}
}

// A container replaced in its pod (a restart: new container ID) counts as
// gone too.
func TestOwnerCacheReResolvesAfterContainerRestart(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a", ContainerID: "old"}}}
	c := newOwnerCache(fs)
	c.resolve(7)
	c.endCycle()
	fs.owners[7] = attribution.Owner{Resolved: true, PodUID: "a", ContainerID: "new"}
	c.retireGone(metaWith("new"))
	if o, _ := c.resolve(7); o.ContainerID != "new" {
		t.Errorf("owner %+v, want the restarted container", o)
	}
}

// A stale PID seen only in samples that procfs no longer has keeps the
// owner it had: those are its last samples.
func TestOwnerCacheStaleExitedPIDKeepsOwner(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a", ContainerID: "ca"}}}
	c := newOwnerCache(fs)
	c.resolve(7)
	c.endCycle()
	delete(fs.owners, 7)
	c.retireGone(metaWith("cb"))
	if o := c.lookup(7); o.PodUID != "a" {
		t.Errorf("exited PID owner %+v, want a", o)
	}
}

// Metadata that failed to read (or lists no pods) retires nothing: it
// would send every PID back to procfs.
func TestOwnerCacheKeepsOwnersWhenMetadataFails(t *testing.T) {
	fs := &fakeProcfs{owners: map[uint32]attribution.Owner{7: {Resolved: true, PodUID: "a", ContainerID: "ca"}}}
	c := newOwnerCache(fs)
	c.resolve(7)
	c.endCycle()
	degraded := metaWith("cb")
	degraded.Degraded[SourceKubeMeta] = true
	for _, obs := range []*attribution.Observation{degraded, metaWith()} {
		c.retireGone(obs)
		c.resolve(7)
		c.endCycle()
	}
	if fs.reads != 1 {
		t.Errorf("procfs read %d times, want 1", fs.reads)
	}
}
