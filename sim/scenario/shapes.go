package scenario

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The converters of the "shapes of real clusters" fields: what DRA
// drivers publish and kubelet lists, and edits of pod annotations.

func (c *converter) resourceSlices(path string, raw []*FileResourceSlice) []ResourceSlice {
	var out []ResourceSlice
	for i, r := range raw {
		sp := index(path, i)
		if r.Driver == "" {
			c.p.addf(field(sp, "driver"), "is required")
		}
		if r.Pool == "" {
			c.p.addf(field(sp, "pool"), "is required")
		}
		rs := ResourceSlice{Driver: r.Driver, Pool: r.Pool}
		for j, d := range r.Devices {
			rs.Devices = append(rs.Devices, c.sliceDevice(index(field(sp, "devices"), j), d))
		}
		out = append(out, rs)
	}
	return out
}

// sliceDevice keeps each attribute's scalar text: `count: 3` and
// `count: "3"` both give "3", `mig: true` gives "true".
func (c *converter) sliceDevice(path string, r FileSliceDevice) SliceDevice {
	if r.Name == "" {
		c.p.addf(field(path, "name"), "is required")
	}
	d := SliceDevice{Name: r.Name}
	if r.Attributes != nil {
		d.Attributes = make(map[string]string, len(r.Attributes))
	}
	// Sorted so that several problems come out in a stable order.
	for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
		ap := field(field(path, "attributes"), k)
		v := r.Attributes[k]
		switch {
		case strings.TrimSpace(k) == "":
			c.p.addf(field(path, "attributes"), "%q is not an attribute name", shortText(k))
		case !v.set():
			c.p.addf(ap, "has no value (give a string, an integer or a bool)")
		default:
			if text, ok := attributeText(&c.p, ap, v.node); ok {
				d.Attributes[k] = text
			}
		}
	}
	return d
}

// attributeText is an attribute value's text: a scalar as written, or
// resource.k8s.io's typed form, a mapping with the one key string, int, bool
// or version (`uuid: {string: GPU-…}`, `index: {int: 0}`,
// `migEnabled: {bool: false}`, `driverVersion: {version: 1.2.3}`), whose
// value's text is kept the same way.
func attributeText(p *problems, path string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.MappingNode {
		return scalarText(p, path, n)
	}
	if len(n.Content) != 2 {
		p.addf(path, "a typed attribute value has exactly one of string, int, bool or version, got %d keys (line %d)", len(n.Content)/2, n.Line)
		return "", false
	}
	key, val := n.Content[0], n.Content[1]
	if key.Kind != yaml.ScalarNode {
		p.addf(path, "expected a scalar or one of string, int, bool or version, got a mapping (line %d)", n.Line)
		return "", false
	}
	tp := field(path, key.Value)
	text, ok := scalarText(p, tp, val)
	if !ok {
		return "", false
	}
	switch key.Value {
	case "string":
	case "int":
		if _, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err != nil {
			p.addf(tp, "%q is not an integer (line %d)", text, val.Line)
			return "", false
		}
	case "bool":
		if _, err := strconv.ParseBool(strings.TrimSpace(text)); err != nil {
			p.addf(tp, "%q is not a bool (line %d)", text, val.Line)
			return "", false
		}
	case "version":
		if strings.TrimSpace(text) == "" {
			p.addf(tp, "is empty (line %d)", val.Line)
			return "", false
		}
	default:
		p.addf(path, "%q is not an attribute type: give string, int, bool or version (line %d)", shortText(key.Value), key.Line)
		return "", false
	}
	return text, true
}

// claims reads a container's DRA claim devices. The device need not be
// published by the node's resourceSlices: a claim naming a device the node
// does not publish is what a collector must survive, as device-plugin IDs
// naming an unknown GPU are.
func (c *converter) claims(path string, raw []FileClaim) []Claim {
	var out []Claim
	seen := make(map[Claim]int)
	for i, r := range raw {
		cp := index(path, i)
		for _, f := range []struct{ name, v string }{{"claim", r.Claim}, {"driver", r.Driver}, {"pool", r.Pool}, {"device", r.Device}} {
			if f.v == "" {
				c.p.addf(field(cp, f.name), "is required")
			}
		}
		cl := Claim(r)
		if j, dup := seen[cl]; dup {
			c.p.addf(cp, "claim %q device %s/%s/%s is already listed by claims[%d] of this container", shortText(r.Claim), shortText(r.Driver), shortText(r.Pool), shortText(r.Device), j)
			continue
		}
		seen[cl] = i
		out = append(out, cl)
	}
	return out
}

// annotationChanges reads a pod's annotation edits: each inside the pod's
// lifetime (both ends inclusive, as the pod is listed), in time order.
func (c *converter) annotationChanges(path string, raw []FileAnnotationChange, pod Pod, lifeOK bool) []AnnotationChange {
	var out []AnnotationChange
	prev, prevOK := time.Duration(0), false
	for i, r := range raw {
		cp := index(path, i)
		at, ok := c.requiredDuration(field(cp, "at"), r.At)
		switch {
		case !ok:
		case lifeOK && at < pod.Start:
			c.p.addf(field(cp, "at"), "%s is before the pod's start %s", at, pod.Start)
		case lifeOK && at > pod.End:
			c.p.addf(field(cp, "at"), "%s is after the pod's end %s", at, pod.End)
		case prevOK && at < prev:
			c.p.addf(field(cp, "at"), "%s is before %s %s; changes must be in time order", at, field(index(path, i-1), "at"), prev)
		}
		if ok {
			prev, prevOK = at, true
		}
		if len(r.Annotations) == 0 {
			c.p.addf(field(cp, "annotations"), "must give at least one annotation")
		}
		c.annotations(field(cp, "annotations"), r.Annotations)
		out = append(out, AnnotationChange{At: at, Annotations: r.Annotations})
	}
	return out
}
