package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procTree is the procfs-like tree: <root>/<pid>/cgroup and <root>/<pid>/comm.
type procTree struct {
	root string
}

func (t procTree) dir(pid uint32) string {
	return filepath.Join(t.root, strconv.FormatUint(uint64(pid), 10))
}

// write creates the entry of p; its PID must have no entry.
func (t procTree) write(p *proc) error {
	dir := t.dir(p.pid)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(p.cgroup), 0o644); err != nil {
		return fmt.Errorf("cannot write cgroup of pid %d: %w", p.pid, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(p.comm+"\n"), 0o644); err != nil {
		return fmt.Errorf("cannot write comm of pid %d: %w", p.pid, err)
	}
	return nil
}

// remove deletes the entry of pid.
func (t procTree) remove(pid uint32) error {
	if err := os.RemoveAll(t.dir(pid)); err != nil {
		return fmt.Errorf("cannot remove %s: %w", t.dir(pid), err)
	}
	return nil
}
