package groundtruth

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// draGPUDriver is the only DRA driver whose claims hand out GPUs; claims of
// other drivers (NICs, compute domains) hold no GPU capacity.
const draGPUDriver = "gpu.nvidia.com"

const modeDRA = "dra"

// draKey is one allocated DRA device: what pod-resources lists per claim.
type draKey struct{ driver, pool, device string }

// draDevices maps the GPU driver's ResourceSlice devices to this node's
// GPUs and MIG instances by their uuid attribute. A device without one, or
// whose uuid is not on this node, maps to nothing: its claims hold no
// capacity, which stays unallocated.
func draDevices(sc *scenario.Scenario, idx *deviceIndex) map[draKey]device {
	out := make(map[draKey]device)
	for _, rs := range sc.Node.ResourceSlices {
		if rs.Driver != draGPUDriver {
			continue
		}
		for _, sd := range rs.Devices {
			if d, ok := idx.byUUID[uuidAttribute(sd.Attributes)]; ok {
				out[draKey{rs.Driver, rs.Pool, sd.Name}] = d
			}
		}
	}
	return out
}

// uuidAttribute reads "uuid", or a domain-qualified "<domain>/uuid" as the
// resource.k8s.io API also allows.
func uuidAttribute(attrs map[string]string) string {
	if v, ok := attrs["uuid"]; ok {
		return strings.TrimSpace(v)
	}
	for _, k := range sortedKeys(attrs) {
		if strings.HasSuffix(k, "/uuid") {
			return strings.TrimSpace(attrs[k])
		}
	}
	return ""
}

// draHold is one container holding one DRA device while it runs.
type draHold struct {
	m   *member
	win window
}

// draSpans divides each DRA device equally among the containers holding it
// at each moment (ledger.md, row dra): the device's share is cut wherever a
// holder starts or stops, and adjacent pieces of equal share are merged.
func draSpans(dev device, holds []draHold) {
	wins := make([]window, len(holds))
	for i, h := range holds {
		wins[i] = h.win
	}
	sweep(wins, func(a, b time.Duration, live []int) {
		for _, i := range live {
			holds[i].m.addSpan(span{dev: dev, share: dev.weight / float64(len(live)), win: window{a, b}})
		}
	})
}

// draClaims collects, per mapped device, the containers whose claims list
// it (each container once per device).
func draClaims(devs map[draKey]device, m *member, claims []scenario.Claim, into map[draKey][]draHold) []holding {
	var out []holding
	for _, c := range claims {
		k := draKey{c.Driver, c.Pool, c.Device}
		d, ok := devs[k]
		if !ok || holdsDRA(into[k], m) {
			continue
		}
		into[k] = append(into[k], draHold{m: m, win: m.win})
		out = append(out, holding{dev: d, mode: modeDRA, dra: true})
	}
	return out
}

func holdsDRA(holds []draHold, m *member) bool {
	for _, h := range holds {
		if h.m == m {
			return true
		}
	}
	return false
}

func sortedDRAKeys(m map[draKey][]draHold) []draKey {
	keys := make([]draKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b draKey) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.pool, b.pool), cmp.Compare(a.device, b.device))
	})
	return keys
}
