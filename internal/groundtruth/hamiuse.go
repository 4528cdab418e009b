package groundtruth

import "time"

// useFloors gives the use floors of HAMi containers their use: a HAMi
// container pays at least what it used on a GPU, whatever its annotation
// says, out of the capacity no one else holds there (allocate settles
// that). A holding without a core limit, or one its annotation cannot
// vouch for, is floored; so is every whole GPU a container charged by its
// annotation runs on without holding it. Each floored span is cut where
// the container's busy fraction on the device changes.
func useFloors(members []*member, tracks []track) {
	for _, m := range members {
		held := make(map[string]bool)
		for _, s := range m.spans {
			held[s.dev.uuid()] = true
			if s.useFloor {
				m.useSpans = appendUse(m.useSpans, s, m.key, tracks)
			}
		}
		if m.byAnnotation {
			for _, dev := range unlistedDevices(m, tracks, held) {
				m.useSpans = appendUse(m.useSpans, span{dev: dev, win: m.win, useFloor: true}, m.key, tracks)
			}
		}
	}
}

// unlistedDevices are the whole GPUs member m runs on and holds nothing
// of, in the order its processes name them.
func unlistedDevices(m *member, tracks []track, held map[string]bool) []device {
	var out []device
	for _, t := range tracks {
		u := t.dev.uuid()
		if t.owner != m.key || t.dev.instance != "" || held[u] {
			continue
		}
		held[u] = true
		out = append(out, t.dev)
	}
	return out
}

// appendUse appends s cut at every change of owner's busy fraction on
// s's device, each piece carrying that fraction as its use.
func appendUse(spans []span, s span, owner string, tracks []track) []span {
	u := s.dev.uuid()
	cuts := []time.Duration{s.win.start, s.win.end}
	for _, t := range tracks {
		if t.owner != owner || t.dev.uuid() != u {
			continue
		}
		for _, g := range t.segs {
			cuts = append(cuts, g.From, g.To)
		}
	}
	cuts = sortedUnique(cuts)
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		if a < s.win.start || b > s.win.end {
			continue
		}
		use := 0.0
		for _, t := range tracks {
			if t.owner != owner || t.dev.uuid() != u {
				continue
			}
			for _, g := range t.segs {
				if g.From <= a && a < g.To {
					use += g.Fraction
				}
			}
		}
		p := s
		p.win, p.use = window{start: a, end: b}, min(use, 1)
		spans = append(spans, p)
	}
	return spans
}
