package tenancy

import "testing"

// TestModeProps: the table says what docs/ARCHITECTURE.md's detectors
// section and docs/ledger-format.md say of each mode: noisy neighbours only
// on whole GPUs shared without isolation (timeslicing, mps, hami); memory
// growth on timeslicing, mps, mig and the MIG replica modes, never on
// exclusive, hami or dra.
func TestModeProps(t *testing.T) {
	for m, want := range map[Mode]Props{
		Exclusive:      {},
		Timeslicing:    {Replicated: true, NoisyNeighbours: true, MemoryGrowth: true},
		MPS:            {Replicated: true, NoisyNeighbours: true, MemoryGrowth: true},
		MIG:            {MIG: true, MemoryGrowth: true},
		MIGTimeslicing: {MIG: true, Replicated: true, MemoryGrowth: true},
		MIGMPS:         {MIG: true, Replicated: true, MemoryGrowth: true},
		HAMi:           {NoisyNeighbours: true},
		DRA:            {},
		"":             {},
		"MIG":          {}, // the contract's text is lower case; nothing else matches
	} {
		if got := m.Props(); got != want {
			t.Errorf("%q.Props() = %+v, want %+v", m, got, want)
		}
	}
}

// TestModeText: the constants are the sharing_mode column's values
// (docs/ledger-format.md); a change here would change every ledger.
func TestModeText(t *testing.T) {
	for m, want := range map[Mode]string{
		Exclusive: "exclusive", Timeslicing: "timeslicing", MPS: "mps", MIG: "mig",
		MIGTimeslicing: "mig+timeslicing", MIGMPS: "mig+mps", HAMi: "hami", DRA: "dra",
	} {
		if string(m) != want {
			t.Errorf("mode %q, want %q", m, want)
		}
	}
}

func TestReplicas(t *testing.T) {
	for _, tt := range []struct {
		mig, mps bool
		want     Mode
	}{
		{false, false, "timeslicing"},
		{false, true, "mps"},
		{true, false, "mig+timeslicing"},
		{true, true, "mig+mps"},
	} {
		if got := Replicas(tt.mig, tt.mps); got != tt.want {
			t.Errorf("Replicas(mig %v, mps %v) = %q, want %q", tt.mig, tt.mps, got, tt.want)
		}
	}
}
