package attribution

import "strings"

// DRA (ledger.md, row dra). Kubelet pod-resources lists each container's
// allocated claim devices as (driver, pool, device); the node's
// ResourceSlices give each device's attributes. NVIDIA's GPU driver
// (NVIDIA/k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin) names whole GPUs
// "gpu-<minor>" (deviceinfo.go) and MIG devices
// "gpu-<minor>-mig-<profile>-<profileID>-<placement>" (mig.go), and
// publishes a "uuid" attribute on both (GPU-... or MIG-...) and
// "parentUUID" on MIG devices. The uuid is what ties a claim to NVML.
//
// Each claimed device is charged 1 (GPU) or slices/7 (MIG), divided
// equally among the containers that hold it this cycle (a claim shared by
// several pods is listed for each). The slice is the device's UUID.

// draKey names one DRA device.
type draKey struct{ driver, pool, device string }

// placeClaims places the claim devices of allocation a for holder h.
func (e *Engine) placeClaims(h *holder, a *Allocation) {
	c := &e.cy
	for i := range a.Claims {
		cd := &a.Claims[i]
		if !e.isGPUDriver(cd.Driver) {
			c.anomaly(AnomalyNonGPUClaim, cd.ClaimNamespace+"/"+cd.ClaimName+" "+cd.Driver,
				"claim "+cd.ClaimNamespace+"/"+cd.ClaimName+" of "+h.who()+" is for driver "+cd.Driver+
					", not a GPU driver; not charged")
			continue
		}
		k := draKey{cd.Driver, cd.Pool, cd.Device}
		gpu, inst, why := c.resolveClaim(k)
		if why != "" {
			c.anomaly(AnomalyUnmappedClaim, k.driver+"/"+k.pool+"/"+k.device, "claim "+cd.ClaimNamespace+"/"+
				cd.ClaimName+" of "+h.who()+": device "+k.driver+"/"+k.pool+"/"+k.device+" "+why+
				"; its capacity stays unallocated")
			continue
		}
		g := &c.gpus[gpu]
		sid := SliceID{Raw: g.UUID, Kind: SliceKindGPU, UUID: g.UUID, Replica: -1, GI: -1, CI: -1}
		base := 1.0
		if inst >= 0 {
			m := &g.MIG[inst]
			sid.Raw, sid.Kind, sid.UUID = m.UUID, SliceKindMIG, m.UUID
			base = migWeight(m)
		}
		ri, added := c.place(h, rowW{gpu: gpu, inst: inst, sid: sid, src: srcDRA, base: base})
		if added {
			c.rows[ri].dra = c.countHolder(k)
		}
	}
}

func (e *Engine) isGPUDriver(driver string) bool {
	for _, d := range e.cfg.DRAGPUDrivers {
		if d == driver {
			return true
		}
	}
	return false
}

// resolveClaim maps a claimed device to a GPU or MIG instance (-1) of this
// node through its uuid attribute; why says what is missing otherwise.
func (c *cycle) resolveClaim(k draKey) (gpu, inst int, why string) {
	if !c.built.dra {
		clear(c.draDevIdx)
		for i := range c.obs.Metadata.DRADevices {
			d := &c.obs.Metadata.DRADevices[i]
			dk := draKey{d.Driver, d.Pool, d.Name}
			if _, dup := c.draDevIdx[dk]; !dup {
				c.draDevIdx[dk] = i
			}
		}
		c.built.dra = true
	}
	di, ok := c.draDevIdx[k]
	if !ok {
		return -1, -1, "is in no ResourceSlice of this node"
	}
	uuid := strings.TrimSpace(c.obs.Metadata.DRADevices[di].Attributes["uuid"])
	switch {
	case uuid == "":
		return -1, -1, "has no uuid attribute"
	case strings.HasPrefix(uuid, migPrefix):
		if r, ok := c.migIdx[uuid]; ok {
			return r.gpu, r.inst, ""
		}
	default:
		if gi, ok := c.gpuByUUID(uuid); ok {
			return gi, -1, ""
		}
	}
	return -1, -1, "has uuid " + uuid + ", which is not on this node"
}

// countHolder counts one more container holding device k this cycle and
// returns the index of its count.
func (c *cycle) countHolder(k draKey) int32 {
	i, ok := c.draIdx[k]
	if !ok {
		i = int32(len(c.draCount))
		c.draIdx[k] = i
		c.draCount = append(c.draCount, 0)
	}
	c.draCount[i]++
	return i
}
