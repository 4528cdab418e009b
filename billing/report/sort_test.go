package report

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortLines puts random lines (every type, keys that share some fields;
// no two equal, as in a report) in compareLines' order, each line moved
// whole.
func TestSortLinesOrdersWholeLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	types := []LineType{LineCharge, LineIdleShare, LinePlatform, LineRounding, LineQuota, LineAboveQuota}
	for trial := 0; trial < 50; trial++ {
		n := rng.IntN(300)
		var lines []Line
	draw:
		for len(lines) < n {
			l := Line{Team: fmt.Sprintf("t%d", rng.IntN(4)), Namespace: fmt.Sprintf("ns%d", rng.IntN(5)),
				GPUModel: fmt.Sprintf("m%d", rng.IntN(3)), SharingMode: fmt.Sprintf("s%d", rng.IntN(2)), Type: types[rng.IntN(len(types))]}
			for i := range lines {
				if compareLines(lines[i], l) == 0 {
					continue draw // lines of a report never tie
				}
			}
			l.Amount = int64(len(lines)) // the line's identity, to see it moved whole
			l.Exact = big.NewRat(l.Amount, 7)
			lines = append(lines, l)
		}
		want := slices.Clone(lines)
		slices.SortStableFunc(want, compareLines)
		sortLines(lines)
		for i := range lines {
			if lines[i].Amount != want[i].Amount || lines[i].Team != want[i].Team || lines[i].Exact.Cmp(big.NewRat(lines[i].Amount, 7)) != 0 {
				t.Fatalf("trial %d: place %d holds line %d (%s), want line %d (%s)", trial, i, lines[i].Amount, lines[i].Team, want[i].Amount, want[i].Team)
			}
		}
	}
}
