package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/attribution"
)

// DefaultRoot is the proc filesystem of the process's own PID namespace.
const DefaultRoot = "/proc"

// Resolver reads process owners from a proc filesystem. It keeps no state
// and is safe for concurrent use; the collector caches what it returns.
type Resolver struct {
	root string
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
	uid, id, _, err := ParseCgroup(string(cg))
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
		PodUID:      strings.Clone(uid),
		ContainerID: strings.Clone(id),
		Comm:        strings.TrimSpace(string(comm)),
	}, nil
}
