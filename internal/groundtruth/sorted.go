package groundtruth

import (
	"cmp"
	"slices"
	"time"
)

// sortedKeys fixes the order of float sums over maps, so that truth.json is
// byte-for-byte reproducible.
func sortedKeys[V any, K cmp.Ordered](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedUnique(ts []time.Duration) []time.Duration {
	slices.Sort(ts)
	return slices.Compact(ts)
}
