package attribution

// A pod that ends inside a cycle window is gone from the metadata at the
// poll that closes the window, but its processes' last samples are read at
// that poll. Keeping the pods of the previous cycle for one more cycle lets
// those samples find their container (a row with no allocation this cycle)
// instead of landing in unattributed with an "unknown owner" complaint.

// withDeparted returns obs with the previous cycle's pods that processes
// still name but the metadata no longer lists. obs's own slices are never
// written to.
func (e *Engine) withDeparted(obs Observation) Observation {
	if len(e.lastPods) == 0 {
		return obs
	}
	listed := make(map[string]bool, len(obs.Metadata.Pods))
	for i := range obs.Metadata.Pods {
		listed[obs.Metadata.Pods[i].UID] = true
	}
	var extra []PodMeta
	for i := range obs.Processes {
		uid := obs.Processes[i].Owner.PodUID
		if uid == "" || listed[uid] {
			continue
		}
		if pi, ok := e.lastPods[uid]; ok {
			extra = append(extra, e.lastPodBuf[pi])
			listed[uid] = true
		}
	}
	if len(extra) == 0 {
		return obs
	}
	pods := make([]PodMeta, 0, len(obs.Metadata.Pods)+len(extra))
	obs.Metadata.Pods = append(append(pods, obs.Metadata.Pods...), extra...)
	return obs
}

// rememberPods keeps this cycle's pods (departed ones carried only once).
// The pods live in a reused buffer and the map holds indexes: a PodMeta
// is too big for a map to store inline, so a map of them would allocate
// once per pod per cycle.
func (e *Engine) rememberPods(obs *Observation, departed map[string]bool) {
	clear(e.lastPods)
	clear(e.lastPodBuf) // drop last cycle's references before reuse
	e.lastPodBuf = e.lastPodBuf[:0]
	for i := range obs.Metadata.Pods {
		if pm := &obs.Metadata.Pods[i]; !departed[pm.UID] {
			e.lastPods[pm.UID] = int32(len(e.lastPodBuf))
			e.lastPodBuf = append(e.lastPodBuf, *pm)
		}
	}
}
