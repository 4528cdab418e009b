package groundtruth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestReviewTruthDump writes our own ground truth for the review scenarios
// (testdata/review) next to the hand truth, as truth.internal.json, so that
// the two readings can be compared. Run with REVIEW_DUMP=1.
func TestReviewTruthDump(t *testing.T) {
	if os.Getenv("REVIEW_DUMP") == "" {
		t.Skip("set REVIEW_DUMP=1")
	}
	dirs, _ := filepath.Glob("../../testdata/review/*/scenario.yaml")
	for _, p := range dirs {
		sc, err := scenario.Load(p)
		if err != nil {
			t.Logf("%s: rejected: %v", p, err)
			continue
		}
		tr, err := Compute(sc)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		f, _ := os.Create(filepath.Join(filepath.Dir(p), "truth.internal.json"))
		if err := tr.WriteJSON(f); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}
