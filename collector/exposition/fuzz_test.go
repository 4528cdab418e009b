package exposition

import (
	"testing"
	"unicode/utf8"

	"github.com/gpuledger/gpuledger/attribution"
)

// FuzzUpdateLabels feeds arbitrary names and pod labels (they come from
// whoever deploys pods) through Update. Nothing may panic, the gathered
// exposition must stay valid for a pedantic registry, and a container
// with valid UTF-8 names must be served with its fixed labels intact.
func FuzzUpdateLabels(f *testing.F) {
	f.Add("ml", "infer-1", "server", "app.kubernetes.io/name", "infer", "team")
	f.Add("", "", "", "", "", "")
	f.Add("a\xffb", "pod", "c", "team", "evil", "label_team")
	f.Add("ns", "p", "c", "__name__", "x", "node")
	f.Fuzz(func(t *testing.T, ns, pod, container, key, value, key2 string) {
		e := New(node, Options{PodLabelAllowlist: []string{key, key2}})
		s, end := window(0)
		c := trainer(5)
		c.Namespace, c.Pod, c.Container = ns, pod, container
		meta := CycleMeta{Pods: []attribution.PodMeta{{Namespace: ns, Name: pod, Labels: map[string]string{key: value, key2: value}}}}
		for range 2 {
			e.Update(attribution.CycleResult{Start: s, End: end, GPUs: []attribution.GPUCycle{
				{UUID: gpuA, Model: modelA, Capacity: 10, Containers: []attribution.ContainerCycle{c}},
			}}, meta)
		}
		mfs := gather(t, e)
		if !utf8.ValidString(ns + pod + container + value) {
			return
		}
		m := mustSeries(t, mfs, "gpuledger_container_gpu_allocated_seconds_total", nil)
		got := labelMap(m)
		for k, want := range map[string]string{"node": node, "team": "alpha", "namespace": ns, "pod": pod, "container": container} {
			if got[k] != want {
				t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], want, got)
			}
		}
		if v := metricValue(m); v != 20 {
			t.Errorf("allocated = %v, want 20", v)
		}
	})
}
