package dcgmsource

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// watchedFields are the fields read for every GPU and GPU instance.
var watchedFields = []dcgm.Short{
	dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE,        // 1001
	dcgm.DCGM_FI_PROF_SM_ACTIVE,               // 1002
	dcgm.DCGM_FI_PROF_DRAM_ACTIVE,             // 1005
	dcgm.DCGM_FI_DEV_FB_USED,                  // 252
	dcgm.DCGM_FI_DEV_POWER_USAGE,              // 155
	dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, // 156
}

// valuesFrom groups DCGM field values by entity. Blank, not-found,
// not-supported and failed values are missing, and an entity whose
// GR_ENGINE_ACTIVE is missing is left out altogether: a zero there would
// read as "idle", while a missing entity makes attribution fall back (NVML
// samples, or unattributed). Values of entities not in ents are dropped.
func valuesFrom(fvs []dcgm.FieldValue_v2, ents map[dcgm.GroupEntityPair]Entity) []Values {
	type acc struct {
		v      Values
		active bool
	}
	byEntity := make(map[dcgm.GroupEntityPair]*acc, len(ents))
	for i := range fvs {
		fv := &fvs[i]
		key := dcgm.GroupEntityPair{EntityGroupId: fv.EntityGroupId, EntityId: fv.EntityID}
		ent, known := ents[key]
		if !known {
			continue
		}
		a := byEntity[key]
		if a == nil {
			a = &acc{v: Values{Entity: ent}}
			byEntity[key] = a
		}
		if applyField(&a.v, fv) {
			if fv.FieldID == dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE {
				a.active = true
			}
			if at := fromMicros(fv.TS); at.After(a.v.At) {
				a.v.At = at
			}
		}
	}
	out := make([]Values, 0, len(byEntity))
	for _, a := range byEntity {
		if a.active {
			out = append(out, a.v)
		}
	}
	slices.SortFunc(out, func(a, b Values) int {
		if c := cmp.Compare(a.Entity.GPUIndex, b.Entity.GPUIndex); c != 0 {
			return c
		}
		return cmp.Compare(a.Entity.GPUInstanceID, b.Entity.GPUInstanceID)
	})
	return out
}

// applyField stores one field value into v and reports whether it was a
// usable value.
func applyField(v *Values, fv *dcgm.FieldValue_v2) bool {
	if fv.Status != dcgm.DCGM_ST_OK {
		return false
	}
	switch fv.FieldID {
	case dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE:
		return setRatio(&v.GrEngineActive, fv)
	case dcgm.DCGM_FI_PROF_SM_ACTIVE:
		return setRatio(&v.SMActive, fv)
	case dcgm.DCGM_FI_PROF_DRAM_ACTIVE:
		return setRatio(&v.DRAMActive, fv)
	case dcgm.DCGM_FI_DEV_POWER_USAGE:
		f, ok := floatValue(fv)
		if ok && f >= 0 {
			v.PowerWatts = f
			return true
		}
	case dcgm.DCGM_FI_DEV_FB_USED:
		n, ok := intValue(fv)
		if ok && !isInt32Sentinel(n) {
			v.FBUsedMiB = n
			return true
		}
	case dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
		if n, ok := intValue(fv); ok {
			v.EnergyMilliJ = n
			return true
		}
	}
	return false
}

// setRatio stores an activity ratio, clamped to 0..1 (the profiling
// counters can overshoot slightly at period edges).
func setRatio(dst *float64, fv *dcgm.FieldValue_v2) bool {
	f, ok := floatValue(fv)
	if !ok {
		return false
	}
	*dst = min(max(f, 0), 1)
	return true
}

// floatValue decodes a double field (or an int64 one), false for DCGM's
// blank and error sentinels and for NaN and infinities.
func floatValue(fv *dcgm.FieldValue_v2) (float64, bool) {
	switch fv.FieldType {
	case dcgm.DCGM_FT_DOUBLE:
		f := math.Float64frombits(binary.LittleEndian.Uint64(fv.Value[:8]))
		if math.IsNaN(f) || math.IsInf(f, 0) || f >= dcgm.DCGM_FT_FP64_BLANK {
			return 0, false
		}
		return f, true
	case dcgm.DCGM_FT_INT64:
		n, ok := intValue(fv)
		return float64(n), ok
	}
	return 0, false
}

// intValue decodes an int64 field (or a whole double one), false for
// DCGM's blank and error sentinels and for negative values.
func intValue(fv *dcgm.FieldValue_v2) (uint64, bool) {
	switch fv.FieldType {
	case dcgm.DCGM_FT_INT64:
		n := int64(binary.LittleEndian.Uint64(fv.Value[:8]))
		if n < 0 || n >= dcgm.DCGM_FT_INT64_BLANK {
			return 0, false
		}
		return uint64(n), true
	case dcgm.DCGM_FT_DOUBLE:
		f, ok := floatValue(fv)
		if !ok || f < 0 || f >= math.MaxInt64 {
			return 0, false
		}
		return uint64(f), true
	}
	return 0, false
}

// isInt32Sentinel reports DCGM's 32-bit blank and error values, which
// 32-bit fields such as FB_USED carry widened to int64. Only applied to
// fields that cannot reach 2^31 legitimately.
func isInt32Sentinel(n uint64) bool {
	const blank = uint64(dcgm.DCGM_FT_INT32_BLANK)
	return n >= blank && n <= blank+3
}

// fromMicros converts a DCGM timestamp (µs since the epoch) to UTC.
func fromMicros(us int64) time.Time {
	if us <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
