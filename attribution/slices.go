package attribution

import (
	"strconv"
	"strings"
)

// hamiParse is a cached parse of one HAMi annotation value.
type hamiParse struct {
	parts [][]HAMiDevice
	err   error
}

// maxHAMiCache bounds the annotation cache; pods come and go.
const maxHAMiCache = 4096

// buildSlices joins kubelet's allocations with pod metadata into rows, one
// per (GPU, slice, container). IDs that do not parse or name a device this
// node does not have are anomalies and give nothing, so their capacity
// stays unallocated.
func (e *Engine) buildSlices() {
	c := &e.cy
	pods := c.obs.Metadata.Pods
	for ai := range c.obs.Allocations {
		a := &c.obs.Allocations[ai]
		pod, podUID, ctrIndex := c.allocPod(ai, a), "", -1
		if pod >= 0 {
			podUID = pods[pod].UID
			ctrIndex = containerIndex(&pods[pod], a.Container)
		}
		ctr := ctrID{a.Namespace, a.Pod, podUID, a.Container}
		team, overlap := "", c.overlap(pod)
		for _, raw := range a.DeviceIDs {
			sid, err := c.parseID(raw)
			if err != nil {
				c.anomaly(AnomalyBadDeviceID, raw, err.Error())
				continue
			}
			gpu, inst, ok := c.resolveSlice(sid)
			if !ok {
				c.anomaly(AnomalyUnknownDevice, raw, "device ID "+strconv.Quote(raw)+
					" of "+a.Namespace+"/"+a.Pod+"/"+a.Container+" names no GPU or MIG instance on this node")
				continue
			}
			e.recordSeen(sid, gpu, inst)
			if team == "" {
				team = c.team(pod, a.Namespace)
			}
			g := c.group(pod, ctrIndex, gpu, inst, ctr, team)
			if c.holds(g, raw) {
				continue
			}
			c.groups[g].hasSlice = true
			c.addRow(g, rowW{gpu: gpu, inst: inst, sid: sid, resource: a.Resource,
				pod: pod, ctrIndex: ctrIndex, overlap: overlap})
		}
	}
}

// parseID parses a device ID, reusing last cycle's parse of the ID at the
// same position in the allocations.
func (c *cycle) parseID(raw string) (SliceID, error) {
	n := c.sidNext
	c.sidNext++
	if n < len(c.sidHint) && c.sidHint[n].Raw == raw && raw != "" {
		return c.sidHint[n], nil
	}
	sid, err := ParseDeviceID(raw)
	if n >= len(c.sidHint) {
		c.sidHint = append(c.sidHint, SliceID{})
	}
	c.sidHint[n] = sid // zero on error: never matches a non-empty raw
	return sid, err
}

func containerIndex(p *PodMeta, name string) int {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return i
		}
	}
	return -1
}

// holds reports whether group g already has slice raw (kubelet listing an
// ID twice must not charge it twice).
func (c *cycle) holds(g int32, raw string) bool {
	for ri := c.groups[g].head; ri >= 0; ri = c.rows[ri].next {
		if c.rows[ri].sid.Raw == raw {
			return true
		}
	}
	return false
}

// resolveSlice finds the GPU and MIG instance (-1 for whole GPUs) an ID
// names.
func (c *cycle) resolveSlice(sid SliceID) (gpu, inst int, ok bool) {
	switch {
	case sid.Kind == SliceKindGPU:
		gpu, ok = c.gpuByUUID(sid.UUID)
		return gpu, -1, ok
	case sid.Legacy:
		r, ok := c.legacyIdx[legacyKey{sid.Parent, sid.GI}]
		return r.gpu, r.inst, ok
	default:
		r, ok := c.migIdx[sid.UUID]
		return r.gpu, r.inst, ok
	}
}

// overlap is how many seconds of the window pod held its devices: the
// window clipped to the pod's start time.
func (c *cycle) overlap(pod int) float64 {
	if pod < 0 {
		return c.w
	}
	st := c.obs.Metadata.Pods[pod].StartTime
	if st.IsZero() {
		return c.w
	}
	s := st.UnixNano()
	switch {
	case s >= c.now:
		return 0
	case s > c.prev:
		return float64(c.now-s) / 1e9
	}
	return c.w
}

// recordSeen remembers replica and HAMi IDs, which estimate the replica
// count where the node has no replicas label.
func (e *Engine) recordSeen(sid SliceID, gpu, inst int) {
	if sid.Replica < 0 {
		return
	}
	c := &e.cy
	var s map[int]struct{}
	switch gw := &c.gpuW[gpu]; {
	case inst >= 0:
		s = seenSet(e.seenReplicas, c.gpus[gpu].MIG[inst].UUID)
	case sid.HAMi:
		if gw.seenHAMi == nil {
			gw.seenHAMi = seenSet(e.seenHAMi, c.gpus[gpu].UUID)
		}
		s = gw.seenHAMi
	default:
		if gw.seen == nil {
			gw.seen = seenSet(e.seenReplicas, c.gpus[gpu].UUID)
		}
		s = gw.seen
	}
	if _, ok := s[sid.Replica]; !ok {
		s[sid.Replica] = struct{}{}
	}
}

func seenSet(sets map[string]map[int]struct{}, key string) map[int]struct{} {
	s := sets[key]
	if s == nil {
		s = map[int]struct{}{}
		sets[key] = s
	}
	return s
}

// computeShares gives every row its sharing mode, allocation share and
// allocated seconds, scaling a GPU's shares down where they add up to more
// than the whole GPU.
func (e *Engine) computeShares() {
	c := &e.cy
	for ri := range c.rows {
		r := &c.rows[ri]
		r.mode, r.share, r.estimated = e.share(r)
		gw := &c.gpuW[r.gpu]
		gw.shareSum += r.share
		if gw.mode == "" {
			gw.mode = r.mode
		}
	}
	for ri := range c.rows {
		r := &c.rows[ri]
		if s := c.gpuW[r.gpu].shareSum; s > 1 {
			r.share /= s
		}
		r.allocated = r.share * r.overlap
		c.groups[r.group].shareSum += r.share
	}
	for gi := range c.gpus {
		if c.gpuW[gi].mode == "" {
			c.gpuW[gi].mode = c.fallbackMode(gi)
		}
	}
}

// share returns a row's sharing mode, its share of the physical GPU and
// whether the share is an estimate (ledger.md, "Allocation share").
func (e *Engine) share(r *rowW) (mode string, share float64, estimated bool) {
	c := &e.cy
	g := &c.gpus[r.gpu]
	switch {
	case r.sid.Kind == SliceKindGPU && r.sid.HAMi:
		share, estimated = e.hamiShare(r)
		return ModeHAMi, share, estimated
	case r.sid.Kind == SliceKindGPU && r.sid.Replica < 0:
		return ModeExclusive, 1, false
	case r.sid.Kind == SliceKindGPU:
		n, est := e.replicas(r.resource, g.UUID)
		mode = ModeTimeslicing
		if c.mpsNode {
			mode = ModeMPS
		}
		return mode, 1 / float64(n), est
	}
	w := migWeight(&g.MIG[r.inst])
	if r.sid.Replica < 0 {
		return ModeMIG, w, false
	}
	n, est := e.replicas(r.resource, g.MIG[r.inst].UUID)
	mode = ModeMIGTimeslicing
	if c.mpsNode {
		mode = ModeMIGMPS
	}
	return mode, w / float64(n), est
}

// replicas is the replica count of a shared device: the resource's or the
// node's replicas label, else the distinct replica IDs seen so far on the
// device (an estimate).
func (e *Engine) replicas(resource, device string) (n int, estimated bool) {
	c := &e.cy
	if resource != "" && resource != "nvidia.com/gpu" {
		if n := positiveInt(c.nodeLabels[resource+".replicas"]); n > 0 {
			return n, false
		}
	}
	if c.replicas > 0 {
		return c.replicas, false
	}
	return max(len(e.seenReplicas[device]), 1), true
}

// migWeight is w(i), the instance's compute slices over the GPU's seven.
// Where NVML gave no slice count the profile name ("3g.40gb") says it.
func migWeight(m *MIGInstance) float64 {
	s := m.Slices
	if s <= 0 || s > 7 {
		s = profileSlices(m.Profile)
	}
	return float64(s) / 7
}

func profileSlices(profile string) int {
	n, _, ok := strings.Cut(profile, "g.")
	if !ok {
		return 1
	}
	// Profiles like "1c.3g.40gb" name compute slices in the "c" part.
	if c, _, ok := strings.Cut(n, "c."); ok {
		n = c
	}
	s, err := strconv.Atoi(n)
	if err != nil || s <= 0 || s > 7 {
		return 1
	}
	return s
}

// hamiShare trusts HAMi's annotation only where the container's part of
// it names the GPU kubelet gave the container; otherwise it charges one
// virtual device of the GPU, 1/N of it, as an estimate.
func (e *Engine) hamiShare(r *rowW) (share float64, estimated bool) {
	c := &e.cy
	g := &c.gpus[r.gpu]
	fallback := 1 / float64(max(len(e.seenHAMi[g.UUID]), 1))
	who := func() string {
		if r.pod < 0 {
			return r.sid.Raw
		}
		p := &c.obs.Metadata.Pods[r.pod]
		return p.Namespace + "/" + p.Name + " " + r.sid.Raw
	}
	mismatch := func(why string) (float64, bool) {
		c.anomaly(AnomalyHAMiMismatch, who(), "HAMi device "+who()+": "+why+"; charged 1/N of the GPU as an estimate")
		return fallback, true
	}
	if r.pod < 0 {
		return mismatch("no pod metadata")
	}
	ann, ok := c.obs.Metadata.Pods[r.pod].Annotations[HAMiAnnotation]
	if !ok {
		return mismatch("pod has no " + HAMiAnnotation + " annotation")
	}
	parts, err := e.parseHAMi(ann)
	if err != nil {
		c.anomaly(AnomalyBadAnnotation, who(), err.Error())
		return fallback, true
	}
	if r.ctrIndex < 0 || r.ctrIndex >= len(parts) {
		return mismatch("annotation has no part for this container")
	}
	for _, d := range parts[r.ctrIndex] {
		if !strings.EqualFold(d.UUID, r.sid.UUID) {
			continue
		}
		if d.Cores > 0 {
			return float64(d.Cores) / 100, false
		}
		if g.MemoryMiB == 0 {
			return mismatch("no core limit and the GPU's memory size is unknown")
		}
		return min(float64(d.MemoryMiB)/float64(g.MemoryMiB), 1), false
	}
	return mismatch("annotation names other GPUs for this container")
}

func (e *Engine) parseHAMi(ann string) ([][]HAMiDevice, error) {
	if p, ok := e.hamiCache[ann]; ok {
		return p.parts, p.err
	}
	if len(e.hamiCache) >= maxHAMiCache {
		clear(e.hamiCache)
	}
	parts, err := ParseHAMiAnnotation(ann)
	e.hamiCache[ann] = hamiParse{parts, err}
	return parts, err
}

// fallbackMode is the mode of a GPU nobody holds a slice of: mig on MIG
// GPUs, else the node's sharing strategy, else exclusive. (A held GPU's
// mode is its slices' mode where they agree, else the first slice's, which
// is the first slice's either way.)
func (c *cycle) fallbackMode(gpu int) string {
	if c.gpus[gpu].MIGEnabled {
		return ModeMIG
	}
	switch strings.ToLower(strings.TrimSpace(c.nodeLabels[LabelSharingStrategy])) {
	case "mps":
		return ModeMPS
	case "time-slicing", "timeslicing":
		return ModeTimeslicing
	}
	return ModeExclusive
}
