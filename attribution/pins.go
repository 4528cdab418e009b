package attribution

import (
	"strconv"
	"strings"
	"time"
)

// Tenants can edit their own pods' annotations, and HAMi's allocation
// annotation says how much of which GPU a container is charged. So the
// value in force for a container is the first one observed while it runs
// (the first cycle kubelet lists it with HAMi devices), kept for its
// lifetime and across collector restarts (RestorePins); a later edit moves
// no cost and is an annotation_changed anomaly, once per change.

// pinKey names one container's pinned annotation.
type pinKey struct{ podUID, container, key string }

// pinVal is a pin and the last differing value reported against it.
type pinVal struct {
	pin      AnnotationPin
	reported string
	hasRep   bool
}

// RestorePins seeds the annotation values in force from a durable store,
// so that a restarted collector keeps charging by the values its
// predecessor first observed. Call it before the first Observe. A pin
// already held (restored or observed) is kept.
func (e *Engine) RestorePins(pins []AnnotationPin) {
	if e.pins == nil {
		e.pins = make(map[pinKey]pinVal, len(pins))
	}
	for _, p := range pins {
		k := pinKey{p.PodUID, p.Container, p.Key}
		if _, ok := e.pins[k]; !ok && p.PodUID != "" {
			e.pins[k] = pinVal{pin: p}
		}
	}
}

// pinnedAnnotation returns the value of annotation key in force for
// holder h of pod p: its pin, else the current value, which it pins (a
// NewPin of this cycle). A current value that differs from the pin is
// reported once per change. The anomaly key names the container and the
// annotation, never the tenant-written value: a tenant rewriting the value
// every poll must not grow the collector's log-once set.
func (e *Engine) pinnedAnnotation(h *holder, p *PodMeta, key string) (string, bool) {
	c := &e.cy
	cur, has := p.Annotations[key]
	if p.UID == "" {
		return cur, has // nothing to pin it to
	}
	k := pinKey{p.UID, h.ctr.container, key}
	pv, ok := e.pins[k]
	if !ok {
		if !has {
			return "", false
		}
		if e.pins == nil {
			e.pins = map[pinKey]pinVal{}
		}
		pin := AnnotationPin{PodUID: p.UID, Container: h.ctr.container, Key: key, Value: cur,
			At: time.Unix(0, c.now).UTC()}
		if first, seen := e.firstSeen[p.UID]; seen && first != cur && key == HAMiAnnotation {
			// The scenario format puts the value first observed while the
			// container runs in force; an edit between the pod's binding
			// and the container's start is still the tenant's doing, so it
			// is reported, if not charged.
			c.anomaly(AnomalyAnnotationChanged, h.who()+" "+key, key+" of "+h.who()+" was "+quoteShort(first)+
				" when the pod was first listed and "+quoteShort(cur)+" when the container started; charged by the latter")
		}
		e.pins[k] = pinVal{pin: pin}
		c.newPins = append(c.newPins, pin)
		return cur, true
	}
	if cur != pv.pin.Value && !(pv.hasRep && pv.reported == cur) {
		what := "changed to " + quoteShort(cur)
		if !has {
			what = "removed"
		}
		c.anomaly(AnomalyAnnotationChanged, h.who()+" "+key, key+" of "+h.who()+" "+what+
			" while it runs; still charged by the value first observed, "+quoteShort(pv.pin.Value))
		pv.reported, pv.hasRep = cur, true
		e.pins[k] = pv
	}
	return pv.pin.Value, true
}

// quoteShort quotes an annotation value for a log line, cut at 200 bytes
// without splitting a UTF-8 character, quotes and control bytes escaped.
func quoteShort(s string) string {
	if len(s) > 200 {
		return strconv.Quote(strings.ToValidUTF8(s[:200], "")) + "..."
	}
	return strconv.Quote(s)
}

// noteFirstSeen remembers the HAMi annotation of each pod the first time
// the metadata lists it, so that an edit made before a container starts
// (and pins its value) is reported. One map lookup per pod and cycle.
func (e *Engine) noteFirstSeen() {
	pods := e.cy.obs.Metadata.Pods
	for i := range pods {
		p := &pods[i]
		if p.UID == "" {
			continue
		}
		if _, seen := e.firstSeen[p.UID]; seen {
			continue
		}
		v, ok := p.Annotations[HAMiAnnotation]
		if !ok {
			continue
		}
		if e.firstSeen == nil {
			e.firstSeen = map[string]string{}
		}
		e.firstSeen[p.UID] = v
	}
}

// prunePins drops the pins of pods the metadata no longer lists, so memory
// stays bounded by the pods on the node. Nothing is dropped on a cycle
// whose metadata failed: absent pods there are not gone.
func (e *Engine) prunePins() {
	c := &e.cy
	if len(e.pins)+len(e.firstSeen) == 0 || c.obs.Degraded["kubemeta"] {
		return
	}
	for k := range e.pins {
		if _, ok := c.podByUID(k.podUID); !ok {
			delete(e.pins, k)
		}
	}
	for uid := range e.firstSeen {
		if _, ok := c.podByUID(uid); !ok {
			delete(e.firstSeen, uid)
		}
	}
}
