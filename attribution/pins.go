package attribution

// pinKey names one container's pinned annotation.
type pinKey struct{ podUID, container, key string }

// RestorePins seeds the annotation values in force from a durable store,
// so that a restarted collector keeps charging by the values its
// predecessor first observed. Call it before the first Observe.
func (e *Engine) RestorePins(pins []AnnotationPin) {
	if e.pins == nil {
		e.pins = make(map[pinKey]AnnotationPin, len(pins))
	}
	for _, p := range pins {
		k := pinKey{p.PodUID, p.Container, p.Key}
		if _, ok := e.pins[k]; !ok {
			e.pins[k] = p
		}
	}
}
