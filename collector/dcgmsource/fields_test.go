package dcgmsource

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

var (
	gpu0 = dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: 0}
	gpu1 = dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: 1}
	gi7  = dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU_I, EntityId: 7} // DCGM's own instance ID
	gi8  = dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU_I, EntityId: 8}

	testEnts = map[dcgm.GroupEntityPair]Entity{
		gpu0: {GPUIndex: 0, GPUInstanceID: -1},
		gpu1: {GPUIndex: 1, GPUInstanceID: -1},
		gi7:  {GPUIndex: 1, GPUInstanceID: 2},
		gi8:  {GPUIndex: 1, GPUInstanceID: 1},
	}
)

const tsBase = int64(1740830400000000) // 2025-03-01T12:00:00Z in µs

// raw8 lays out the first 8 bytes of a field value, little-endian.
func raw8(bits uint64) [4096]byte {
	var v [4096]byte
	for i := range 8 {
		v[i] = byte(bits >> (8 * i))
	}
	return v
}

func dbl(e dcgm.GroupEntityPair, f dcgm.Short, v float64, ts int64) dcgm.FieldValue_v2 {
	return dcgm.FieldValue_v2{EntityGroupId: e.EntityGroupId, EntityID: e.EntityId, FieldID: f,
		FieldType: dcgm.DCGM_FT_DOUBLE, TS: ts, Value: raw8(math.Float64bits(v))}
}

func i64(e dcgm.GroupEntityPair, f dcgm.Short, v int64, ts int64) dcgm.FieldValue_v2 {
	return dcgm.FieldValue_v2{EntityGroupId: e.EntityGroupId, EntityID: e.EntityId, FieldID: f,
		FieldType: dcgm.DCGM_FT_INT64, TS: ts, Value: raw8(uint64(v))}
}

func TestWatchedFieldIDs(t *testing.T) {
	want := []dcgm.Short{1001, 1002, 1005, 252, 155, 156}
	if !reflect.DeepEqual(watchedFields, want) {
		t.Fatalf("watched fields %v, want %v", watchedFields, want)
	}
}

func TestValuesFrom(t *testing.T) {
	fvs := []dcgm.FieldValue_v2{
		// GPU 1, every field, timestamps differ: At is the newest.
		dbl(gpu1, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0.75, tsBase),
		dbl(gpu1, dcgm.DCGM_FI_PROF_SM_ACTIVE, 0.5, tsBase),
		dbl(gpu1, dcgm.DCGM_FI_PROF_DRAM_ACTIVE, 0.25, tsBase),
		i64(gpu1, dcgm.DCGM_FI_DEV_FB_USED, 40960, tsBase+500),
		dbl(gpu1, dcgm.DCGM_FI_DEV_POWER_USAGE, 312.5, tsBase+1000),
		i64(gpu1, dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 5_000_000_000, tsBase+1000),
		// Instance GI 2 on GPU 1: power and energy blank, ratio above 1.
		dbl(gi7, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 1.02, tsBase),
		dbl(gi7, dcgm.DCGM_FI_DEV_POWER_USAGE, dcgm.DCGM_FT_FP64_BLANK, tsBase+9000),
		i64(gi7, dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, dcgm.DCGM_FT_INT64_NOT_SUPPORTED, tsBase+9000),
		i64(gi7, dcgm.DCGM_FI_DEV_FB_USED, dcgm.DCGM_FT_INT32_BLANK, tsBase+9000),
		// Instance GI 1: GR_ENGINE_ACTIVE not supported -> left out.
		dbl(gi8, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, dcgm.DCGM_FT_FP64_NOT_SUPPORTED, tsBase),
		i64(gi8, dcgm.DCGM_FI_DEV_FB_USED, 100, tsBase),
		// GPU 0: GR_ENGINE_ACTIVE failed (status) -> left out.
		func() dcgm.FieldValue_v2 {
			fv := dbl(gpu0, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0.3, tsBase)
			fv.Status = dcgm.DCGM_ST_NO_DATA
			return fv
		}(),
		dbl(gpu0, dcgm.DCGM_FI_DEV_POWER_USAGE, 60, tsBase),
		// An entity not watched.
		dbl(dcgm.GroupEntityPair{EntityGroupId: dcgm.FE_GPU, EntityId: 9}, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0.9, tsBase),
	}
	got := valuesFrom(fvs, testEnts)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	want := []Values{
		{Entity: Entity{GPUIndex: 1, GPUInstanceID: -1}, At: at.Add(time.Millisecond),
			GrEngineActive: 0.75, SMActive: 0.5, DRAMActive: 0.25, FBUsedMiB: 40960, PowerWatts: 312.5, EnergyMilliJ: 5_000_000_000},
		{Entity: Entity{GPUIndex: 1, GPUInstanceID: 2}, At: at, GrEngineActive: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("valuesFrom:\n got %+v\nwant %+v", got, want)
	}
}

func TestFieldDecoding(t *testing.T) {
	e := gpu0
	tests := []struct {
		name    string
		fv      dcgm.FieldValue_v2
		wantF   float64
		wantFOK bool
		wantI   uint64
		wantIOK bool
	}{
		{"double", dbl(e, 1, 0.125, 0), 0.125, true, 0, true},
		{"double whole", dbl(e, 1, 42, 0), 42, true, 42, true},
		{"double NaN", dbl(e, 1, math.NaN(), 0), 0, false, 0, false},
		{"double +Inf", dbl(e, 1, math.Inf(1), 0), 0, false, 0, false},
		{"double blank", dbl(e, 1, dcgm.DCGM_FT_FP64_BLANK, 0), 0, false, 0, false},
		{"double not found", dbl(e, 1, dcgm.DCGM_FT_FP64_NOT_FOUND, 0), 0, false, 0, false},
		{"double negative", dbl(e, 1, -3, 0), -3, true, 0, false},
		{"int", i64(e, 1, 1234, 0), 1234, true, 1234, true},
		{"int blank", i64(e, 1, dcgm.DCGM_FT_INT64_BLANK, 0), 0, false, 0, false},
		{"int not permissioned", i64(e, 1, dcgm.DCGM_FT_INT64_NOT_PERMISSIONED, 0), 0, false, 0, false},
		{"int negative", i64(e, 1, -1, 0), 0, false, 0, false},
		{"string", dcgm.FieldValue_v2{FieldType: dcgm.DCGM_FT_STRING}, 0, false, 0, false},
	}
	for _, tt := range tests {
		f, fok := floatValue(&tt.fv)
		n, iok := intValue(&tt.fv)
		if f != tt.wantF || fok != tt.wantFOK || n != tt.wantI || iok != tt.wantIOK {
			t.Errorf("%s: float %v,%v int %v,%v; want float %v,%v int %v,%v",
				tt.name, f, fok, n, iok, tt.wantF, tt.wantFOK, tt.wantI, tt.wantIOK)
		}
	}
}

func TestInt32SentinelOnlyOnFBUsed(t *testing.T) {
	// An energy counter past 2^31 mJ (about 0.6 kWh) is real, not blank.
	fvs := []dcgm.FieldValue_v2{
		dbl(gpu0, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0.1, tsBase),
		i64(gpu0, dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, dcgm.DCGM_FT_INT32_BLANK+1, tsBase),
		i64(gpu0, dcgm.DCGM_FI_DEV_FB_USED, dcgm.DCGM_FT_INT32_BLANK+1, tsBase),
	}
	got := valuesFrom(fvs, testEnts)
	if len(got) != 1 || got[0].EnergyMilliJ != 2147483633 || got[0].FBUsedMiB != 0 {
		t.Fatalf("got %+v, want energy 2147483633 and FB used missing", got)
	}
}

func FuzzValuesFrom(f *testing.F) {
	f.Add(uint16(1001), uint8('d'), uint64(math.Float64bits(0.5)), int64(tsBase), 0)
	f.Add(uint16(252), uint8('i'), uint64(dcgm.DCGM_FT_INT64_BLANK), int64(0), 0)
	f.Add(uint16(155), uint8('d'), uint64(math.Float64bits(math.NaN())), int64(-5), -14)
	f.Fuzz(func(t *testing.T, field uint16, typ uint8, bits uint64, ts int64, status int) {
		fvs := []dcgm.FieldValue_v2{
			dbl(gpu0, dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0.5, tsBase),
			{EntityGroupId: gpu0.EntityGroupId, EntityID: gpu0.EntityId, FieldID: dcgm.Short(field),
				FieldType: uint(typ), Status: status, TS: ts, Value: raw8(bits)},
		}
		for _, v := range valuesFrom(fvs, testEnts) {
			for _, r := range []float64{v.GrEngineActive, v.SMActive, v.DRAMActive} {
				if !(r >= 0 && r <= 1) {
					t.Fatalf("ratio %v out of 0..1: %+v", r, v)
				}
			}
			if math.IsNaN(v.PowerWatts) || math.IsInf(v.PowerWatts, 0) || v.PowerWatts < 0 {
				t.Fatalf("power %v: %+v", v.PowerWatts, v)
			}
			if v.EnergyMilliJ >= uint64(dcgm.DCGM_FT_INT64_BLANK) || v.FBUsedMiB >= uint64(dcgm.DCGM_FT_INT64_BLANK) {
				t.Fatalf("sentinel passed through: %+v", v)
			}
		}
	})
}
