package ledger

import (
	"fmt"
	"strconv"
	"strings"
)

// ReplicaIdentity is the part of a container row that names its replica:
// node, GPU, slice, pod, pod UID and container (and the row group). ContainerRows reads it as
// one column, the fields joined by identitySep, because every column
// fetched from the embedded store is a locked call into SQLite: six text
// columns were most of a row's read time. (Joining with length prefixes
// instead cost SQLite a third more than plain separators.)
type ReplicaIdentity struct {
	Node, GPUUUID, SliceID, Pod, PodUID, Container string
	// grp is the row's group (team, namespace, model, mode, kind): one
	// column less to fetch, and a replica's rows all share it.
	grp int64
}

// identitySep is ASCII's unit separator: no Kubernetes name, node name,
// GPU UUID or container name can hold it. A field that does anyway makes
// the read fail (parseIdentity), never mis-split.
const identitySep = "\x1f"

// identitySQL builds the joined identity in SQL, in parseIdentity's order.
const identitySQL = `grp || char(31) || node || char(31) || gpu_uuid || char(31) || slice_id || char(31) || pod || char(31) || pod_uid || char(31) || container`

// parseIdentity splits a joined identity; the fields share its memory.
func parseIdentity(s string) (ReplicaIdentity, error) {
	if n := strings.Count(s, identitySep); n != 6 {
		return ReplicaIdentity{}, fmt.Errorf("replica identity %q: a name holds the unit separator U+001F", strings.ReplaceAll(s, identitySep, "|"))
	}
	var f [7]string
	rest := s
	for i := range 6 {
		f[i], rest, _ = strings.Cut(rest, identitySep)
	}
	f[6] = rest
	grp, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return ReplicaIdentity{}, fmt.Errorf("replica identity %q: group %q is not an integer", strings.ReplaceAll(s, identitySep, "|"), f[0])
	}
	return ReplicaIdentity{f[1], f[2], f[3], f[4], f[5], f[6], grp}, nil
}
