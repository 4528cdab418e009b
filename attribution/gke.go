package attribution

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gpuledger/gpuledger/tenancy"
)

// GKE's device plugin (GoogleCloudPlatform/container-engine-accelerators)
// names devices after their /dev node: "nvidia<minor>" with the NVML
// minor number (pkg/gpu/nvidia/manager.go, discoverGPUs), MIG partitions
// "nvidia<minor>/gi<id>" after the GPU instance's capability file
// (pkg/gpu/nvidia/mig/mig.go), and shared devices "<id>/vgpu<k>", k from 0
// to max-shared-clients-per-gpu - 1 (manager.go, ListDevices;
// gpusharing/gpusharing.go accepts exactly these two shapes).

const gkePrefix = "nvidia"

// Node labels GKE sets on nodes with GPU sharing.
const (
	LabelGKESharingStrategy = "cloud.google.com/gke-gpu-sharing-strategy"       // time-sharing | mps
	LabelGKEMaxClients      = "cloud.google.com/gke-max-shared-clients-per-gpu" // clients per GPU or instance
)

// parseGKE parses nvidia<minor>[/gi<id>][/vgpu<k>].
func parseGKE(s string) (SliceID, error) {
	parts := strings.Split(s[len(gkePrefix):], "/")
	if len(parts) > 3 {
		return SliceID{}, errors.New("GKE ID wants nvidia<minor>[/gi<id>][/vgpu<k>]")
	}
	minor, err := parseIndex(parts[0], "GPU minor number")
	if err != nil {
		return SliceID{}, err
	}
	id := SliceID{Raw: s, Kind: SliceKindGPU, GKE: true, Minor: minor, Replica: -1, GI: -1, CI: -1}
	rest := parts[1:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "gi") {
		if id.GI, err = parseIndex(rest[0][2:], "GPU instance ID"); err != nil {
			return SliceID{}, err
		}
		id.Kind, rest = SliceKindMIG, rest[1:]
	}
	if len(rest) > 0 {
		if !strings.HasPrefix(rest[0], "vgpu") || len(rest) > 1 {
			return SliceID{}, errors.New("GKE ID wants nvidia<minor>[/gi<id>][/vgpu<k>]")
		}
		if id.Replica, err = parseIndex(rest[0][4:], "vgpu client number"); err != nil {
			return SliceID{}, err
		}
	}
	return id, nil
}

func (s SliceID) gkeString() string {
	b := gkePrefix + strconv.Itoa(s.Minor)
	if s.GI >= 0 {
		b += "/gi" + strconv.Itoa(s.GI)
	}
	if s.Replica >= 0 {
		b += "/vgpu" + strconv.Itoa(s.Replica)
	}
	return b
}

// resolveGKE finds the GPU by minor number and, for gi IDs, the MIG
// instance by GPU instance ID.
func (c *cycle) resolveGKE(sid SliceID) (gpu, inst int, ok bool) {
	if !c.built.minor {
		clear(c.minorIdx)
		for gi := range c.gpus {
			if g := &c.gpus[gi]; g.HasMinor {
				if _, dup := c.minorIdx[g.Minor]; !dup {
					c.minorIdx[g.Minor] = gi
				}
			}
		}
		c.built.minor = true
	}
	gpu, ok = c.minorIdx[sid.Minor]
	if !ok || sid.GI < 0 {
		return gpu, -1, ok
	}
	r, ok := c.legacyIdx[legacyKey{c.gpus[gpu].UUID, sid.GI}]
	return r.gpu, r.inst, ok
}

// gkeShare is the share of a GKE slice: the GPU or the instance's
// slices/7, divided among the node's max shared clients for vgpu IDs (the
// distinct vgpu IDs seen, allocatable or allocated, where the label is
// missing: estimated).
func (e *Engine) gkeShare(r *rowW) (mode tenancy.Mode, share float64, estimated bool) {
	c := &e.cy
	g := &c.gpus[r.gpu]
	share, mode = 1, tenancy.Exclusive
	device := g.UUID
	if r.inst >= 0 {
		share, mode, device = migWeight(&g.MIG[r.inst]), tenancy.MIG, g.MIG[r.inst].UUID
	}
	if r.sid.Replica < 0 {
		return mode, share, false
	}
	n := c.gkeClients
	if n <= 0 {
		n, estimated = max(len(e.seenReplicas[device]), 1), true
	}
	return tenancy.Replicas(r.inst >= 0, c.gkeMPS), share / float64(n), estimated
}
