package scenario

import "testing"

// The profile catalogue and parser are tested in package gpu; a scenario's
// MIG instance weighs what its profile is charged.
func TestMIGInstanceWeight(t *testing.T) {
	if w := (MIGInstance{Profile: "3g.40gb"}).Weight(); w != 3.0/7 {
		t.Errorf("Weight(3g.40gb) = %v, want 3/7", w)
	}
	if w := (MIGInstance{Profile: "junk"}).Weight(); w != 0 {
		t.Errorf("Weight(junk) = %v, want 0", w)
	}
}
