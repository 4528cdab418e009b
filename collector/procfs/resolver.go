package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuledger/gpuledger/attribution"
)

// DefaultRoot is the proc filesystem of the process's own PID namespace.
const DefaultRoot = "/proc"

// Resolver reads process owners from a proc filesystem. It is safe for
// concurrent use; the collector caches what it returns. Its only state is
// the count of malformed cgroup lines it skipped.
type Resolver struct {
	root string

	mu        sync.Mutex
	malformed uint64
	example   string // the latest malformed line met, for the log
}

// MalformedCgroupLines returns how many malformed lines of cgroup files the
// resolver has met since it was created, and a description of the latest.
// Lines skipped in files whose other lines named the owner count too.
func (r *Resolver) MalformedCgroupLines() (n uint64, example string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.malformed, r.example
}

func (r *Resolver) noteMalformed(pid uint32, cg Cgroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.malformed += uint64(cg.Malformed)
	r.example = fmt.Sprintf("pid %d: %v", pid, cg.Problem)
}

// NewResolver returns a Resolver reading <root>/<pid>/cgroup and
// <root>/<pid>/comm. An empty root means DefaultRoot.
func NewResolver(root string) *Resolver {
	if root == "" {
		root = DefaultRoot
	}
	return &Resolver{root: root}
}

// Resolve returns the owner of pid. A PID without a directory (the process
// exited) gives an error wrapping fs.ErrNotExist.
func (r *Resolver) Resolve(pid uint32) (attribution.Owner, error) {
	dir := filepath.Join(r.root, strconv.FormatUint(uint64(pid), 10))
	cgroupFile := filepath.Join(dir, "cgroup")
	cg, err := os.ReadFile(cgroupFile)
	if err != nil {
		return attribution.Owner{}, fmt.Errorf("cannot read cgroup of pid %d: %w", pid, err)
	}
	parsed, err := ParseCgroup(string(cg))
	if parsed.Malformed > 0 {
		r.noteMalformed(pid, parsed)
	}
	if err != nil {
		return attribution.Owner{}, fmt.Errorf("cannot parse %s: %w", cgroupFile, err)
	}
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return attribution.Owner{}, fmt.Errorf("cannot read comm of pid %d: %w", pid, err)
	}
	return attribution.Owner{
		Resolved: true,
		// Cloned so that a cached owner does not pin the whole cgroup file.
		PodUID:      strings.Clone(parsed.PodUID),
		ContainerID: strings.Clone(parsed.ContainerID),
		Comm:        strings.TrimSpace(string(comm)),
	}, nil
}
