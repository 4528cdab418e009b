package exposition

import (
	"testing"
	"unicode/utf8"

	"github.com/gpuledger/gpuledger/attribution"
)

// FuzzUpdateLabels feeds arbitrary names and pod labels (they come from
// whoever deploys pods) through Update. Nothing may panic, the gathered
// exposition must stay valid for a pedantic registry, Handler's text
// writer must serve exactly what promhttp serves, and a container with
// valid UTF-8 names must be served with its fixed labels intact.
func FuzzUpdateLabels(f *testing.F) {
	f.Add("ml", "infer-1", "server", "app.kubernetes.io/name", "infer", "team")
	f.Add("", "", "", "", "", "")
	f.Add("a\xffb", "pod", "c", "team", "evil", "label_team")
	f.Add("ns", "p", "c", "__name__", "x", "node")
	f.Add("n\"s", "p\\o\nd", "c\x00", "k", "v\"\\\n", "k2")
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
		rig := newRig(t, e)
		for _, accept := range []string{acceptText, acceptPrometheus2} {
			got, want := serve(e.Handler(), accept, "", ""), serve(rig.ref, accept, "", "")
			if got.Body.String() != want.Body.String() {
				t.Fatalf("Accept %s: Handler serves\n%s\npromhttp serves\n%s", accept, got.Body, want.Body)
			}
		}
		// Each value on its own: "\xce" and "\x8d" are invalid alone
		// but valid joined.
		for _, v := range []string{ns, pod, container, value} {
			if !utf8.ValidString(v) {
				return
			}
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
