package kubequota

import (
	"cmp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuledger/gpuledger/quota"
)

// checkOut holds for every mapping's output, whatever the input: entries
// valid, sorted, of the one source.
func checkOut(t *testing.T, source string, es []quota.Entry) {
	t.Helper()
	for _, e := range es {
		if err := e.Validate(); err != nil {
			t.Fatalf("invalid entry out: %v", err)
		}
		if e.Source != source {
			t.Fatalf("entry of source %q from the %s mapping", e.Source, source)
		}
	}
	if !slices.IsSortedFunc(es, compareEntries) {
		t.Fatalf("entries not sorted: %v", fmtEntries(es))
	}
}

func compareEntries(a, b quota.Entry) int {
	return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Resource, b.Resource))
}

// FuzzMappings feeds arbitrary JSON (a queue as the dynamic client would
// decode it) to the CRD mappings, and an arbitrary quantity to the
// ResourceQuota mapping: no panic, only valid sorted entries, and an
// object either maps or is named in an error.
func FuzzMappings(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"q","labels":{"team":"t"}},"spec":{"resources":{"gpu":{"quota":2.5,"limit":-1}}}}`,
		`{"metadata":{"name":"q"},"spec":{"guarantee":{"resource":{"nvidia.com/gpu":"4"}},"capability":{"nvidia.com/mig-1g.10gb":7}}}`,
		`{"metadata":{"name":"cq"},"spec":{"namespaceSelector":{},"resourceGroups":[{"flavors":[{"name":"f","resources":[{"name":"nvidia.com/gpu","nominalQuota":"1e3","borrowingLimit":1}]}]}]}}`,
		`{"metadata":{"name":"q"},"spec":{"parentQueue":"q","parent":"q","resources":{"gpu":{"quota":"x"}}}}`,
		`{"metadata":{"name":"q"},"spec":{"resourceGroups":[1,"a",null,{"flavors":{"x":1}}]}}`,
	} {
		f.Add([]byte(s), "500m")
	}
	f.Add([]byte(`{}`), "9223372036854775807")
	f.Add([]byte(`{"spec":null}`), "1e400")
	f.Fuzz(func(t *testing.T, obj []byte, qty string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(obj); err != nil {
			// Not an object the dynamic client would hand over; still
			// give it as a bare map.
			u = &unstructured.Unstructured{Object: map[string]any{}}
			if err := u.UnmarshalJSON(append([]byte(`{"kind":"Queue","apiVersion":"v1","metadata":{"name":"q"},"spec":`), append(obj, '}')...)); err != nil {
				return
			}
		}
		if u.Object == nil {
			return
		}
		us := []*unstructured.Unstructured{u, u.DeepCopy()}
		ns := map[string]map[string]string{"a": {"team": "t"}}
		es, errs := KueueEntries(us, us, us, ns, "")
		checkOut(t, quota.SourceKueue, es)
		checkNamed(t, errs)
		es, errs = VolcanoEntries(us, "")
		checkOut(t, quota.SourceVolcano, es)
		checkNamed(t, errs)
		es, errs = KAIEntries(us, "")
		checkOut(t, quota.SourceKAI, es)
		checkNamed(t, errs)

		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return
		}
		rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "r"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": q}}}
		es, errs = ResourceQuotaEntries([]*corev1.ResourceQuota{rq}, ns, "")
		checkOut(t, quota.SourceResourceQuota, es)
		if (len(es) == 1) == (len(errs) == 1) {
			t.Fatalf("quantity %q: entries %v errors %v: want exactly one of them", qty, fmtEntries(es), errs)
		}
		if len(es) == 1 && (q.Sign() < 0 || es[0].Milli != q.MilliValue()) {
			t.Fatalf("quantity %q: %d thousandths", qty, es[0].Milli)
		}
	})
}

func checkNamed(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		if err == nil || err.Error() == "" {
			t.Fatal("an empty error")
		}
	}
}
