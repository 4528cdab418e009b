package attribution

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SliceKind says whether a device ID names a whole GPU or a MIG instance.
type SliceKind string

// Slice kinds.
const (
	SliceKindGPU SliceKind = "gpu"
	SliceKindMIG SliceKind = "mig"
)

// SliceID is one device ID as kubelet pod-resources lists it, taken apart.
type SliceID struct {
	Raw  string    // the ID exactly as listed
	Kind SliceKind // gpu or mig
	// UUID is GPU-<uuid> or MIG-<uuid>, the whole legacy name for legacy
	// MIG IDs, and empty for GKE IDs (they name devices by number).
	UUID string
	// Replica is <n> of "::<n>", HAMi's "-<n>" or GKE's "/vgpu<n>"; -1
	// when there is none.
	Replica int
	HAMi    bool // GPU-<uuid>-<n>, HAMi's virtual device form

	// GKE IDs (nvidia<minor>[/gi<id>][/vgpu<k>], GKE's device plugin)
	// name the GPU by its NVML minor number and a MIG instance by its GPU
	// instance ID (in GI; -1 without one).
	GKE   bool
	Minor int // NVML minor number of a GKE ID; 0 for other IDs

	// Legacy MIG IDs (MIG-GPU-<uuid>/<gi>/<ci>, drivers before R470) name
	// the instance by its parent GPU and instance IDs instead of a UUID.
	Legacy bool
	Parent string // GPU-<uuid> of a legacy MIG ID
	GI, CI int    // GPU and compute instance IDs of a legacy MIG ID; GI of a GKE ID
}

// Device is the UUID of the device the slice belongs to: the GPU for whole
// GPU slices, the MIG instance (its UUID, or the legacy name) otherwise.
func (s SliceID) Device() string { return s.UUID }

// String formats the ID back into kubelet's form; for every ID that
// ParseDeviceID accepts it returns Raw.
func (s SliceID) String() string {
	if s.GKE {
		return s.gkeString()
	}
	var b strings.Builder
	b.WriteString(s.UUID)
	switch {
	case s.Replica < 0:
	case s.HAMi:
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(s.Replica))
	default:
		b.WriteString("::")
		b.WriteString(strconv.Itoa(s.Replica))
	}
	return b.String()
}

const (
	gpuPrefix       = "GPU-"
	migPrefix       = "MIG-"
	legacyMIGPrefix = "MIG-GPU-"
	uuidLen         = 36
	// maxIndexDigits bounds replica and instance numbers so they never
	// overflow an int and garbage stays garbage.
	maxIndexDigits = 6
)

// ParseDeviceID takes apart a device ID listed by kubelet pod-resources:
//
//	GPU-<uuid>                  a whole GPU
//	GPU-<uuid>::<n>             replica n of a time-sliced or MPS GPU
//	GPU-<uuid>-<n>              HAMi virtual device n of a GPU
//	MIG-<uuid>                  a MIG instance
//	MIG-<uuid>::<n>             replica n of a shared MIG instance
//	MIG-GPU-<uuid>/<gi>/<ci>    a MIG instance in the legacy naming
//	nvidia<minor>               GKE: a whole GPU by NVML minor number
//	nvidia<minor>/vgpu<k>       GKE: time-sharing or MPS client k
//	nvidia<minor>/gi<id>        GKE: the MIG instance with GPU instance ID id
//	nvidia<minor>/gi<id>/vgpu<k>
//
// where <uuid> is 8-4-4-4-12 hex digits. Numbers are decimal without
// leading zeros, so String gives the ID back unchanged.
func ParseDeviceID(s string) (SliceID, error) {
	id, err := parseDeviceID(s)
	if err != nil {
		return SliceID{}, fmt.Errorf("cannot parse device ID %q: %w", s, err)
	}
	return id, nil
}

func parseDeviceID(s string) (SliceID, error) {
	switch {
	case strings.HasPrefix(s, legacyMIGPrefix):
		return parseLegacyMIG(s)
	case strings.HasPrefix(s, gpuPrefix):
		return parseUUIDForm(s, gpuPrefix, SliceKindGPU, true)
	case strings.HasPrefix(s, migPrefix):
		return parseUUIDForm(s, migPrefix, SliceKindMIG, false)
	case strings.HasPrefix(s, gkePrefix):
		return parseGKE(s)
	}
	return SliceID{}, errors.New("want prefix GPU-, MIG- or nvidia")
}

// parseUUIDForm parses <prefix><uuid> with an optional "::<n>" or, where
// allowed, HAMi's "-<n>".
func parseUUIDForm(s, prefix string, kind SliceKind, hamiOK bool) (SliceID, error) {
	end := len(prefix) + uuidLen
	if len(s) < end {
		return SliceID{}, fmt.Errorf("uuid after %q is too short, want 8-4-4-4-12 hex digits", prefix)
	}
	if err := checkUUID(s[len(prefix):end]); err != nil {
		return SliceID{}, err
	}
	id := SliceID{Raw: s, Kind: kind, UUID: s[:end], Replica: -1, GI: -1, CI: -1}
	rest := s[end:]
	switch {
	case rest == "":
		return id, nil
	case strings.HasPrefix(rest, "::"):
		n, err := parseIndex(rest[2:], "replica")
		if err != nil {
			return SliceID{}, err
		}
		id.Replica = n
		return id, nil
	case hamiOK && strings.HasPrefix(rest, "-"):
		n, err := parseIndex(rest[1:], "HAMi device index")
		if err != nil {
			return SliceID{}, err
		}
		id.Replica, id.HAMi = n, true
		return id, nil
	}
	return SliceID{}, fmt.Errorf("unexpected %q after the uuid, want \"::<n>\"", rest)
}

// parseLegacyMIG parses MIG-GPU-<uuid>/<gi>/<ci>, optionally with "::<n>".
func parseLegacyMIG(s string) (SliceID, error) {
	body, replica, hasReplica := strings.Cut(s, "::")
	parts := strings.Split(body[len(migPrefix):], "/")
	if len(parts) != 3 {
		return SliceID{}, errors.New("legacy MIG ID wants GPU-<uuid>/<gi>/<ci>")
	}
	parent := parts[0]
	if len(parent) != len(gpuPrefix)+uuidLen {
		return SliceID{}, errors.New("legacy MIG ID: parent GPU uuid wants 8-4-4-4-12 hex digits")
	}
	if err := checkUUID(parent[len(gpuPrefix):]); err != nil {
		return SliceID{}, err
	}
	gi, err := parseIndex(parts[1], "GPU instance ID")
	if err != nil {
		return SliceID{}, err
	}
	ci, err := parseIndex(parts[2], "compute instance ID")
	if err != nil {
		return SliceID{}, err
	}
	id := SliceID{Raw: s, Kind: SliceKindMIG, UUID: body, Replica: -1,
		Legacy: true, Parent: parent, GI: gi, CI: ci}
	if hasReplica {
		if id.Replica, err = parseIndex(replica, "replica"); err != nil {
			return SliceID{}, err
		}
	}
	return id, nil
}

// checkUUID checks the 8-4-4-4-12 hex layout.
func checkUUID(u string) error {
	if len(u) != uuidLen {
		return errors.New("uuid wants 8-4-4-4-12 hex digits")
	}
	for i := 0; i < len(u); i++ {
		c := u[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return fmt.Errorf("uuid %q: want '-' at offset %d", u, i)
			}
			continue
		}
		if !isHex(c) {
			return fmt.Errorf("uuid %q: %q at offset %d is not a hex digit", u, c, i)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseIndex parses a small decimal number without sign or leading zeros.
func parseIndex(s, what string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("%s is empty", what)
	}
	if len(s) > maxIndexDigits {
		return 0, fmt.Errorf("%s %q has more than %d digits", what, s, maxIndexDigits)
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%s %q has a leading zero", what, s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%s %q is not a decimal number", what, s)
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}
