package report

import (
	"regexp"
	"strings"
)

// One vocabulary for GPU time no container used, on every surface (CLI,
// HTML, dashboards, docs), because "idle" alone meant three things:
//
//   - held but unused: allocated to a container that did not use it (the
//     idle_allocation finding; a team's held-but-unused hours);
//   - never allocated: capacity no container held (ledger kind unallocated);
//   - idle device time: the device was not busy (ledger kind idle).
//
// The contract values (line_type idle_share, kinds unallocated and idle,
// the price book's idle: field) keep their names; labels use these.
const (
	TermHeldButUnused  = "held but unused"
	TermNeverAllocated = "never allocated"
	TermIdleDeviceTime = "idle device time"
)

// ambiguousTerm matches "idle" (but not the price book's "idle:" field or
// the snake_case contract values) and "unallocated".
var ambiguousTerm = regexp.MustCompile(`(?i)\bidle\b(?:[^:]|$)|\bunallocated\b`)

// AmbiguousTerms returns, with some context, each place where text says
// "idle" other than as "idle device time", or "unallocated": the words
// user-facing text must not use. Tests of every surface run it.
func AmbiguousTerms(text string) []string {
	var out []string
	for _, loc := range ambiguousTerm.FindAllStringIndex(text, -1) {
		if strings.HasPrefix(strings.ToLower(text[loc[0]:]), TermIdleDeviceTime) {
			continue
		}
		out = append(out, text[max(0, loc[0]-30):min(len(text), loc[1]+30)])
	}
	return out
}
