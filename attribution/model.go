package attribution

import "strings"

// NormaliseModel turns an NVML product name into the model string the
// ledger uses: "NVIDIA A100-SXM4-80GB" -> "A100-SXM4-80GB". The vendor
// prefix is dropped (also the "NVIDIA-" form GPU feature discovery writes
// into node labels) and runs of whitespace become a single "-", so names
// from NVML and from labels compare equal.
func NormaliseModel(productName string) string {
	s := strings.TrimSpace(productName)
	for _, p := range []string{"NVIDIA ", "NVIDIA-", "nvidia ", "nvidia-"} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	return strings.Join(strings.Fields(s), "-")
}
