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

// The words finance pages use for the rest of the bill: each is defined in
// Glossary (the /glossary page of serve, docs/glossary.md), and pages say
// these rather than the files' column names.
const (
	TermHeld                   = "held"
	TermUsed                   = "used"
	TermUnusedCapacity         = "unused capacity"
	TermShareOfUnusedCapacity  = "share of unused capacity"
	TermCapacityReleased       = "capacity released"
	TermCostMovedBetweenTeams  = "cost that moves between teams"
	TermUnattributed           = "unattributed"
	TermBorrowed               = "borrowed"
	TermEfficiency             = "efficiency"
	TermPlatformLine           = "platform line"
	TermRoundingLine           = "rounding line"
	TermPartial                = "partial"
	TermCoverageGap            = "coverage gap"
	TermChargeLine             = "charge"
	TermPolicy                 = "policy"
	TermIdlePill               = "idle: shared, idle: platform"
	glossaryUnusedCapacityNote = "Under policy allocation it is the capacity no container held (" + TermNeverAllocated + "); under policy usage, " + TermIdleDeviceTime + " and busy time no container is known for (" + TermUnattributed + "); under policy flat, the slots no container held."
)

// GlossaryEntry is one word of the bill and what it means.
type GlossaryEntry struct {
	// ID is the entry's anchor on the glossary page (#held).
	ID, Term, Meaning string
}

// Glossary is every word the finance pages use, in reading order: the
// /glossary page of serve renders it and docs/glossary.md carries the
// same text (a test compares them).
func Glossary() []GlossaryEntry {
	return []GlossaryEntry{
		{"held", TermHeld, "GPU time a team's containers were given, used or not: a whole GPU is 1 GPU-hour per hour, a time-slicing or MPS replica 1/replicas of it, a MIG instance its compute slices / 7, a HAMi share its cores %."},
		{"used", TermUsed, "GPU time a team's containers kept the GPU busy."},
		{"held-but-unused", TermHeldButUnused, "Held minus used: GPU time a container was given and did not use. It is on the team's bill under policy allocation."},
		{"borrowed", TermBorrowed, "Used beyond held: on a time-sliced or MPS GPU a container may run on time its neighbours hold but leave unused."},
		{"efficiency", TermEfficiency, "Used / held. Above 100% is borrowed time."},
		{"unused-capacity", TermUnusedCapacity, "GPU time of the fleet no team was charged for. " + glossaryUnusedCapacityNote},
		{"never-allocated", TermNeverAllocated, "Capacity no container held."},
		{"idle-device-time", TermIdleDeviceTime, "Time the GPU was not busy, whoever held it."},
		{"unattributed", TermUnattributed, "Busy GPU time no container is known for."},
		{"share-of-unused-capacity", TermShareOfUnusedCapacity, "A team's part of the unused capacity, under idle: shared: each day, each GPU model's unused capacity is spread over the teams that were charged on that model that day, in proportion to what they were charged."},
		{"charge", TermChargeLine, "What a team pays for its own GPU time under the policy."},
		{"platform-line", TermPlatformLine, "The unused capacity no team pays for (idle: platform, or a day when no team was charged on a model): the platform's cost."},
		{"rounding-line", TermRoundingLine, "One line of at most a few cents that makes the rounded lines add up to the total, which is rounded once."},
		{"policy", TermPolicy, "What a team pays for, set by the price book: allocation (the GPU time it held), usage (the GPU time it used), flat (the GPU slots it held, per month), quota (its quota, and what it held above it)."},
		{"idle-pill", TermIdlePill, "Who pays for unused capacity, set by the price book: idle: shared spreads it over the teams (each team's share of unused capacity); idle: platform leaves it on the platform line. Either way the total is the same: only who pays changes."},
		{"capacity-released", TermCapacityReleased, "In the advice: the part of a saving the company stops spending, because the change frees whole GPUs that can be given back or left unbought."},
		{"cost-moved", TermCostMovedBetweenTeams, "In the advice: the part of a saving that frees only part of a GPU. The GPU stays, so its cost does not go away: the team that frees it pays less and the freed time becomes unused capacity, paid by the other teams on that GPU model (idle: shared) or by the platform line (idle: platform)."},
		{"partial", TermPartial, "A month not yet ended, or one the ledger covers only in part: month to date, not the month's bill."},
		{"coverage-gap", TermCoverageGap, "Time GPUs the ledger knows sent no data while their node had not left cleanly: not billed, and named on the bill."},
	}
}

// engineerWord matches the files' column names and contract values
// (snake_case words such as allocated_gpu_hours, idle_share,
// idle_allocation, allocated_gpu_seconds): finance pages say the
// glossary's words instead; only the CSV's own documentation names them.
var engineerWord = regexp.MustCompile(`\b[a-z0-9]+(?:_[a-z0-9]+)+\b`)

// EngineerTerms returns, with some context, each column name or contract
// value (a snake_case word) in text, a page's visible text: the words a
// finance page must not use. Tests of every page run it.
func EngineerTerms(text string) []string {
	var out []string
	for _, loc := range engineerWord.FindAllStringIndex(text, -1) {
		out = append(out, text[max(0, loc[0]-30):min(len(text), loc[1]+30)])
	}
	return out
}

// LineLabel is a line type as pages say it: the glossary's words for the
// CSV's line_type values ("idle_share" is "share of unused capacity").
func LineLabel(t LineType) string {
	switch t {
	case LineIdleShare:
		return TermShareOfUnusedCapacity
	case LineAboveQuota:
		return "above quota"
	}
	return strings.ReplaceAll(string(t), "_", " ")
}
