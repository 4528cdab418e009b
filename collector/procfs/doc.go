// Package procfs tells who owns a GPU process: the pod UID and container ID
// from <root>/<pid>/cgroup, and the process name from <root>/<pid>/comm.
//
// On a node the collector reads the host's /proc (the DaemonSet mounts it at
// /host/proc and runs with hostPID), so that PIDs reported by NVML, which are
// host PIDs, name the right directories.
package procfs
