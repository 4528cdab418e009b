package filestore

import (
	"fmt"
	"strconv"
	"strings"
)

// containerKey is what ContainerRows reads of a container row as one text
// column: its interval's length, its group (team, namespace, model, mode,
// kind) and its replica (node, GPU, slice, pod, pod UID, container),
// joined by keySep. Every column fetched from the embedded store is a
// locked call into SQLite, and six text columns were most of a row's read
// time; a replica's minute rows all share one key, so a key is parsed
// once and its strings are handed out again. (Joining with length
// prefixes instead of a separator cost SQLite a third more.)
type containerKey struct {
	lengthNS, grp                                  int64
	node, gpuUUID, sliceID, pod, podUID, container string
}

// keySep is ASCII's unit separator: no Kubernetes name, node name, GPU
// UUID or container name can hold it. A field that does anyway makes the
// read fail (parseContainerKey), never mis-split.
const keySep = "\x1f"

// containerKeySQL builds the key in SQL, in parseContainerKey's order.
const containerKeySQL = `(interval_end_ns - interval_start_ns) || char(31) || grp || char(31) || node || char(31) || gpu_uuid || char(31) ||
	slice_id || char(31) || pod || char(31) || pod_uid || char(31) || container`

// parseContainerKey splits a key; the fields share its memory.
func parseContainerKey(s string) (containerKey, error) {
	shown := strings.ReplaceAll(s, keySep, "|")
	if n := strings.Count(s, keySep); n != 7 {
		return containerKey{}, fmt.Errorf("container row key %q: a name holds the unit separator U+001F", shown)
	}
	var f [8]string
	rest := s
	for i := range 7 {
		f[i], rest, _ = strings.Cut(rest, keySep)
	}
	f[7] = rest
	length, err1 := strconv.ParseInt(f[0], 10, 64)
	grp, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return containerKey{}, fmt.Errorf("container row key %q: length or group is not an integer", shown)
	}
	return containerKey{length, grp, f[2], f[3], f[4], f[5], f[6], f[7]}, nil
}
