package procfs

import (
	"fmt"
	"strings"
)

// Cgroup is what a /proc/<pid>/cgroup file says about its process.
type Cgroup struct {
	// PodUID is the Kubernetes pod UID with dashes, or the 32-hex UID
	// kubelet gives static pods; empty outside any pod.
	PodUID string
	// ContainerID is 64 lowercase hex, or empty when the process sits in
	// the pod's cgroup but in no container (CRI-O's conmon, the pod cgroup
	// itself).
	ContainerID string
	// InPod is false for a process outside any pod (a host process).
	InPod bool
	// Malformed counts the lines that could not be parsed and were
	// skipped; Problem describes the first of them.
	Malformed int
	Problem   error
}

// ParseCgroup finds the pod and container a process belongs to from the
// content of /proc/<pid>/cgroup.
//
// It understands cgroup v1 (one line per hierarchy; the first line naming a
// pod and a container wins) and v2 ("0::<path>"), the systemd and cgroupfs
// kubelet cgroup drivers and the containerd, CRI-O and Docker runtimes.
// Paths are not anchored at the root: seen from a private cgroup namespace
// they may start with "/.." or lack the "/kubepods" prefix.
//
// A malformed line (not "hierarchy-ID:controllers:path", or a pod cgroup
// whose UID is not a UID) is counted and skipped: one bad v1 hierarchy
// must not hide the container the other lines name. Only when no line
// names a pod and some line is malformed is the file an error, since the
// process may then be in a pod nobody can tell. CRLF line ends and empty
// lines carry nothing wrong and are not counted. The strings returned
// share memory with content, except a systemd pod UID.
func ParseCgroup(content string) (Cgroup, error) {
	var (
		cg       Cgroup
		rawUID   string // the first pod seen, "_" form for systemd slices
		lineNo   int
		firstErr error
	)
	for rest := content; rest != ""; {
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		lineNo++
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		uid, id, found, err := parseLine(line)
		if err != nil {
			cg.Malformed++
			if firstErr == nil {
				firstErr = fmt.Errorf("cgroup line %d: %w", lineNo, err)
			}
			continue
		}
		if !found || cg.ContainerID != "" {
			continue // later lines are read only to count malformed ones
		}
		if id != "" {
			rawUID, cg.ContainerID = uid, id
			continue
		}
		// A pod without a container: keep looking, another v1 hierarchy
		// may name the container.
		if rawUID == "" {
			rawUID = uid
		}
	}
	if rawUID == "" && cg.Malformed > 0 {
		return Cgroup{Malformed: cg.Malformed, Problem: firstErr}, firstErr
	}
	cg.Problem = firstErr
	cg.InPod = rawUID != ""
	cg.PodUID = rawUID
	if strings.IndexByte(rawUID, '_') >= 0 {
		cg.PodUID = dashed(rawUID) // once, not per line: the collector resolves every new PID
	}
	return cg, nil
}

// parseLine parses one line of a cgroup file.
func parseLine(line string) (podUID, containerID string, found bool, err error) {
	path, err := cgroupPath(line)
	if err != nil {
		return "", "", false, err
	}
	return parsePath(path)
}

// cgroupPath returns the path of one "hierarchy-ID:controllers:path" line.
func cgroupPath(line string) (string, error) {
	i := strings.IndexByte(line, ':')
	if i < 0 {
		return "", fmt.Errorf("%q is not hierarchy-ID:controllers:path", line)
	}
	if !isDigits(line[:i]) {
		return "", fmt.Errorf("hierarchy ID %q in %q is not a number", line[:i], line)
	}
	rest := line[i+1:]
	j := strings.IndexByte(rest, ':')
	if j < 0 {
		return "", fmt.Errorf("%q is not hierarchy-ID:controllers:path", line)
	}
	path := rest[j+1:]
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("cgroup path %q in %q is not absolute", path, line)
	}
	return path, nil
}

// parsePath looks for the first pod segment of a cgroup path and takes the
// segment below it as the container. The first one wins so that a pod
// running its own kubelet (kind in a pod) is charged as the outer pod,
// which is the one this node's metadata knows.
func parsePath(path string) (podUID, containerID string, found bool, err error) {
	prev := ""
	for rest := path; rest != ""; {
		var seg string
		seg, rest = nextSegment(rest)
		if seg == "" {
			continue
		}
		if i := strings.IndexByte(seg, ':'); i >= 0 {
			uid, id, found, err := colonSegment(seg, i)
			if found || err != nil {
				return uid, id, found, err
			}
		}
		uid, isPod, err := podSegment(prev, seg)
		if err != nil {
			return "", "", false, err
		}
		if isPod {
			next, _ := nextSegment(rest)
			id, err := containerSegment(next)
			if err != nil {
				return "", "", false, err
			}
			return uid, id, true, nil
		}
		prev = seg
	}
	return "", "", false, nil
}

// nextSegment splits the first path segment off rest.
func nextSegment(rest string) (seg, tail string) {
	rest = strings.TrimLeft(rest, "/")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return rest, ""
}

// colonSegment handles "kubepods-...-pod<uid>.slice:cri-containerd:<id>",
// the literal cgroupsPath a runtime that does not use systemd cgroups
// creates (below its own service) when kubelet uses the systemd driver.
func colonSegment(seg string, colon int) (podUID, containerID string, found bool, err error) {
	slice, ok := strings.CutSuffix(seg[:colon], ".slice")
	if !ok {
		return "", "", false, nil
	}
	uid, isPod, err := systemdPodUID(slice)
	if err != nil || !isPod {
		return "", "", false, err
	}
	id := seg[strings.LastIndexByte(seg, ':')+1:]
	if !isHex64(id) {
		return "", "", false, fmt.Errorf("invalid container ID %q in cgroup segment %q", id, seg)
	}
	return uid, id, true, nil
}

// cgroupfsQoS are the cgroupfs-driver parents of a pod cgroup. Below them a
// "pod..." segment must carry a valid UID.
var cgroupfsQoS = [...]string{"kubepods", "burstable", "besteffort"}

// podSegment reports whether seg is a pod's cgroup and returns its UID.
func podSegment(prev, seg string) (uid string, isPod bool, err error) {
	if name, ok := strings.CutSuffix(seg, ".slice"); ok {
		return systemdPodUID(name)
	}
	raw, ok := strings.CutPrefix(seg, "pod")
	if !ok {
		return "", false, nil
	}
	if isUID(raw, '-') || isHex(raw, 32) {
		return raw, true, nil
	}
	for _, q := range cgroupfsQoS {
		if prev == q {
			return "", false, fmt.Errorf("invalid pod UID %q in cgroup segment %q", raw, seg)
		}
	}
	// Outside kubepods (or with the parent hidden by a cgroup namespace)
	// "pod..." may be anything, "podman" for one.
	return "", false, nil
}

// systemdPodUID parses the name of a systemd pod slice (".slice" removed):
// [<root>-]kubepods[-burstable|-besteffort]-pod<uid with _>. The UID is
// returned with its "_" (systemd's escape for "-"), or as 32 hex.
func systemdPodUID(name string) (uid string, isPod bool, err error) {
	i := strings.Index(name, "kubepods")
	if i < 0 || (i > 0 && name[i-1] != '-') {
		return "", false, nil
	}
	rest := name[i+len("kubepods"):]
	if r, ok := strings.CutPrefix(rest, "-burstable"); ok {
		rest = r
	} else if r, ok := strings.CutPrefix(rest, "-besteffort"); ok {
		rest = r
	}
	raw, ok := strings.CutPrefix(rest, "-pod")
	if !ok {
		return "", false, nil // a QoS slice or kubepods.slice itself
	}
	switch {
	case isUID(raw, '_'):
		return raw, true, nil // ParseCgroup restores the dashes
	case isHex(raw, 32):
		return raw, true, nil
	}
	return "", false, fmt.Errorf("invalid pod UID %q in cgroup slice %q", raw, name+".slice")
}

// containerRuntimePrefixes name container cgroups: containerd and Docker
// (cri-dockerd) with the systemd driver, CRI-O with either driver.
var containerRuntimePrefixes = [...]string{"cri-containerd-", "docker-", "crio-"}

// containerSegment returns the container ID of the segment below a pod's
// cgroup, or "" when it is not a container's (conmon, nothing below).
func containerSegment(seg string) (string, error) {
	name := strings.TrimSuffix(seg, ".scope")
	if strings.HasPrefix(name, "crio-conmon-") {
		return "", nil // CRI-O's monitor lives in the pod, outside the container
	}
	for _, p := range containerRuntimePrefixes {
		if id, ok := strings.CutPrefix(name, p); ok {
			if !isHex64(id) {
				return "", fmt.Errorf("invalid container ID %q in cgroup segment %q", id, seg)
			}
			return id, nil
		}
	}
	if isHex64(name) {
		return name, nil // cgroupfs driver with containerd or Docker
	}
	return "", nil
}

// isUID reports whether s is a canonical lowercase UUID with sep in place
// of the dashes (systemd slice names carry "_").
func isUID(s string, sep byte) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != sep {
				return false
			}
		default:
			if !isLowerHex(s[i]) {
				return false
			}
		}
	}
	return true
}

// dashed turns a systemd-escaped UID back into its Kubernetes form.
func dashed(s string) string {
	var b [36]byte
	copy(b[:], s)
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}

func isHex64(s string) bool { return isHex(s, 64) }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool { return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
