package kubequota

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuledger/gpuledger/gpu"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/tenancy"
)

// The node label GPU Feature Discovery sets to the GPU's product name; a
// Kueue ResourceFlavor that selects it names the model its quota buys.
const gpuProductLabel = "nvidia.com/gpu.product"

// requestsPrefix is the only prefix a ResourceQuota may put before an
// extended resource (the API server refuses limits.* and bare names).
const requestsPrefix = "requests."

// maxQuantity is quota.MaxMilli as a quantity: anything larger is refused
// before MilliValue, which would overflow.
var maxQuantity = resource.NewMilliQuantity(quota.MaxMilli, resource.DecimalSI)

// milli converts a quota quantity to thousandths, refusing negatives and
// values past quota.MaxMilli.
func milli(q resource.Quantity) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s is negative", q.String())
	}
	if q.Cmp(*maxQuantity) > 0 {
		return 0, fmt.Errorf("%s is more than %s", q.String(), maxQuantity.String())
	}
	return q.MilliValue(), nil
}

// parseQuantity reads a quantity as unstructured JSON holds it: a string
// ("2", "500m"), an integer or a number.
func parseQuantity(v any) (resource.Quantity, error) {
	switch x := v.(type) {
	case string:
		return resource.ParseQuantity(x)
	case int64:
		return *resource.NewQuantity(x, resource.DecimalSI), nil
	case int:
		return *resource.NewQuantity(int64(x), resource.DecimalSI), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return resource.Quantity{}, fmt.Errorf("%v is not a number", x)
		}
		if math.Abs(x) > float64(quota.MaxMilli) {
			return resource.Quantity{}, fmt.Errorf("%g is more than %s", x, maxQuantity.String())
		}
		// Through its shortest decimal text, so 0.7 is 700 thousandths
		// (0.7*1000 in floating point is not).
		return resource.ParseQuantity(strconv.FormatFloat(x, 'f', -1, 64))
	default:
		return resource.Quantity{}, fmt.Errorf("%v (%T) is not a quantity", v, v)
	}
}

func milliOf(v any) (int64, error) {
	q, err := parseQuantity(v)
	if err != nil {
		return 0, err
	}
	return milli(q)
}

// addMilli adds without overflowing: a sum past quota.MaxMilli stays just
// past it, so Entry.Validate refuses it.
func addMilli(a, b int64) int64 {
	if a > quota.MaxMilli-b {
		return quota.MaxMilli + 1
	}
	return a + b
}

// team is the admin-owned team label of an object (a namespace or a
// queue), else its name.
func team(labels map[string]string, name, key string) string {
	return strings.TrimSpace(tenancy.ResolveTeam(labels, name, key))
}

// sortEntries orders entries by key, as Snapshot returns them.
func sortEntries(es []quota.Entry) {
	slices.SortFunc(es, func(a, b quota.Entry) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Resource, b.Resource))
	})
}

// validated returns es if every entry is valid, else the first error:
// an object is recorded whole or not at all.
func validated(es []quota.Entry) ([]quota.Entry, error) {
	for _, e := range es {
		if err := e.Validate(); err != nil {
			return nil, err
		}
	}
	return es, nil
}

// ResourceQuotaEntries maps the namespaces' ResourceQuotas to entries: one
// per namespace and GPU resource named in spec.hard as
// requests.nvidia.com/gpu or requests.nvidia.com/mig-<profile>, Object the
// namespace's name. Every quota of a namespace binds, so its quota of a
// resource is the smallest any of them states. Scoped quotas (spec.scopes
// or spec.scopeSelector) bind only some pods and are left out: they do not
// bound the namespace. The team is the namespace's label key (nsLabels:
// namespace -> labels; admins own namespace labels), else the namespace's
// name; pod labels never count. A quota whose GPU quantities are invalid
// is skipped, with an error naming it.
func ResourceQuotaEntries(quotas []*corev1.ResourceQuota, nsLabels map[string]map[string]string, key string) ([]quota.Entry, []error) {
	type nsRes struct{ ns, res string }
	minimum := map[nsRes]int64{}
	var errs []error
	for _, rq := range quotas {
		if rq == nil {
			continue
		}
		if len(rq.Spec.Scopes) > 0 || rq.Spec.ScopeSelector != nil {
			continue
		}
		vals := map[string]int64{}
		var bad error
		for name, q := range rq.Spec.Hard {
			ext, ok := strings.CutPrefix(string(name), requestsPrefix)
			if !ok {
				continue
			}
			res, ok := quota.Resource(ext, "")
			if !ok {
				continue
			}
			m, err := milli(q)
			if err != nil {
				bad = fmt.Errorf("ResourceQuota %s/%s: spec.hard[%s]: %w", rq.Namespace, rq.Name, name, err)
				break
			}
			vals[res] = m
		}
		if bad != nil {
			errs = append(errs, bad)
			continue
		}
		for res, m := range vals {
			k := nsRes{rq.Namespace, res}
			if old, seen := minimum[k]; !seen || m < old {
				minimum[k] = m
			}
		}
	}
	// Validate per namespace: one bad name skips that namespace only.
	byNS := map[string][]quota.Entry{}
	for k, m := range minimum {
		byNS[k.ns] = append(byNS[k.ns], quota.Entry{
			Key:   quota.Key{Source: quota.SourceResourceQuota, Object: k.ns, Resource: k.res},
			Team:  team(nsLabels[k.ns], k.ns, key),
			Milli: m,
		})
	}
	var out []quota.Entry
	for ns, es := range byNS {
		v, err := validated(es)
		if err != nil {
			errs = append(errs, fmt.Errorf("ResourceQuotas of namespace %q: %w", ns, err))
			continue
		}
		out = append(out, v...)
	}
	sortEntries(out)
	sortErrors(errs)
	return out, errs
}

func sortErrors(errs []error) {
	slices.SortFunc(errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
}

// KueueEntries maps Kueue ClusterQueues (kueue.x-k8s.io v1beta2 or
// v1beta1, whose fields read here agree) to entries: for each GPU resource
// of spec.resourceGroups[].flavors[].resources[], the nominalQuota summed
// over the flavors that map to one quota resource. A flavor whose
// ResourceFlavor selects nodes by nvidia.com/gpu.product names the model;
// otherwise the quota is on any GPU. LimitMilli is nominal plus
// borrowingLimit when every summed flavor states a borrowingLimit, else 0
// (a flavor without one may borrow without a stated ceiling).
//
// The team is the ClusterQueue's team label; else, when every LocalQueue
// that points at it (spec.clusterQueue) from a namespace its
// spec.namespaceSelector admits is in a namespace of one team, that team;
// else the ClusterQueue's name. A ClusterQueue shared by several teams has
// no single payer: label it. LocalQueues in namespaces the ClusterQueue
// does not admit cannot submit to it and are not counted, so one cannot
// be used to disown a queue.
func KueueEntries(clusterQueues, localQueues, flavors []*unstructured.Unstructured, nsLabels map[string]map[string]string, key string) ([]quota.Entry, []error) {
	models := map[string]string{}
	for _, f := range flavors {
		if f == nil {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(f.Object, "spec", "nodeLabels")
		if p := strings.TrimSpace(labels[gpuProductLabel]); p != "" {
			models[f.GetName()] = gpu.NormaliseModel(p)
		}
	}
	lqNamespaces := map[string][]string{} // ClusterQueue -> namespaces of its LocalQueues
	for _, lq := range localQueues {
		if lq == nil {
			continue
		}
		cq, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
		if cq != "" {
			lqNamespaces[cq] = append(lqNamespaces[cq], lq.GetNamespace())
		}
	}
	var out []quota.Entry
	var errs []error
	for _, cq := range clusterQueues {
		if cq == nil {
			continue
		}
		es, err := clusterQueueEntries(cq, models, lqNamespaces[cq.GetName()], nsLabels, key)
		if err != nil {
			errs = append(errs, fmt.Errorf("kueue ClusterQueue %q: %w", cq.GetName(), err))
			continue
		}
		out = append(out, es...)
	}
	sortEntries(out)
	sortErrors(errs)
	return out, errs
}

func clusterQueueEntries(cq *unstructured.Unstructured, models map[string]string, lqNS []string, nsLabels map[string]map[string]string, key string) ([]quota.Entry, error) {
	type sum struct {
		nominal, limit int64
		unlimited      bool // a flavor states no borrowingLimit
	}
	sums := map[string]*sum{}
	groups, _, err := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	if err != nil {
		return nil, fmt.Errorf("spec.resourceGroups: %w", err)
	}
	for gi, g := range groups {
		gm, _ := g.(map[string]any)
		fls, _, err := unstructured.NestedSlice(gm, "flavors")
		if err != nil {
			return nil, fmt.Errorf("spec.resourceGroups[%d].flavors: %w", gi, err)
		}
		for fi, f := range fls {
			fm, _ := f.(map[string]any)
			flavor, _, _ := unstructured.NestedString(fm, "name")
			rs, _, err := unstructured.NestedSlice(fm, "resources")
			if err != nil {
				return nil, fmt.Errorf("spec.resourceGroups[%d].flavors[%d].resources: %w", gi, fi, err)
			}
			for ri, r := range rs {
				rm, _ := r.(map[string]any)
				name, _, _ := unstructured.NestedString(rm, "name")
				res, ok := quota.Resource(name, models[flavor])
				if !ok {
					continue
				}
				where := fmt.Sprintf("spec.resourceGroups[%d].flavors[%d] (%s).resources[%d] (%s)", gi, fi, flavor, ri, name)
				nominal, err := milliOf(rm["nominalQuota"])
				if err != nil {
					return nil, fmt.Errorf("%s.nominalQuota: %w", where, err)
				}
				s := sums[res]
				if s == nil {
					s = &sum{}
					sums[res] = s
				}
				s.nominal = addMilli(s.nominal, nominal)
				if b, ok := rm["borrowingLimit"]; ok && b != nil {
					borrow, err := milliOf(b)
					if err != nil {
						return nil, fmt.Errorf("%s.borrowingLimit: %w", where, err)
					}
					s.limit = addMilli(s.limit, addMilli(nominal, borrow))
				} else {
					s.unlimited = true
				}
			}
		}
	}
	t := queueTeam(cq, lqNS, nsLabels, key)
	var es []quota.Entry
	for res, s := range sums {
		e := quota.Entry{
			Key:   quota.Key{Source: quota.SourceKueue, Object: cq.GetName(), Resource: res},
			Team:  t,
			Milli: s.nominal,
		}
		if !s.unlimited {
			e.LimitMilli = s.limit
		}
		es = append(es, e)
	}
	return validated(es)
}

// queueTeam is a ClusterQueue's team: its label, else the one team of the
// namespaces of the LocalQueues it admits, else its name.
func queueTeam(cq *unstructured.Unstructured, lqNS []string, nsLabels map[string]map[string]string, key string) string {
	if key == "" {
		key = tenancy.DefaultTeamLabel
	}
	if t := strings.TrimSpace(cq.GetLabels()[key]); t != "" {
		return t
	}
	admits := namespaceSelector(cq)
	one := ""
	for _, ns := range lqNS {
		if !admits(nsLabels[ns]) {
			continue
		}
		t := team(nsLabels[ns], ns, key)
		if one != "" && t != one {
			return cq.GetName()
		}
		one = t
	}
	if one == "" {
		return cq.GetName()
	}
	return one
}

// namespaceSelector returns the ClusterQueue's spec.namespaceSelector as a
// predicate over namespace labels: absent (or unreadable) admits nothing,
// as Kueue reads it.
func namespaceSelector(cq *unstructured.Unstructured) func(map[string]string) bool {
	m, found, err := unstructured.NestedMap(cq.Object, "spec", "namespaceSelector")
	if !found || err != nil {
		return func(map[string]string) bool { return false }
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return func(map[string]string) bool { return false }
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return func(map[string]string) bool { return false }
	}
	return func(l map[string]string) bool { return sel.Matches(labels.Set(l)) }
}

// VolcanoEntries maps Volcano Queues (scheduling.volcano.sh/v1beta1) to
// entries: for each GPU resource a queue names, Milli is
// spec.guarantee.resource when it names the resource, else spec.deserved;
// LimitMilli is spec.capability (0 when absent). Hierarchical queues
// (spec.parent): only leaves, queues no other queue names as parent,
// give entries, so a parent's share of its children is not counted twice.
// The team is the queue's team label, else its name.
func VolcanoEntries(queues []*unstructured.Unstructured, key string) ([]quota.Entry, []error) {
	return leafQueueEntries(queues, "parent", "volcano Queue", func(q *unstructured.Unstructured) ([]quota.Entry, error) {
		return volcanoQueueEntries(q, key)
	})
}

// leafQueueEntries maps the leaf queues of a hierarchy (queues no other
// queue names in spec.<parentField>) with entries, an error naming the
// queue (as kind) for each that does not map; both sorted.
func leafQueueEntries(queues []*unstructured.Unstructured, parentField, kind string,
	entries func(*unstructured.Unstructured) ([]quota.Entry, error)) ([]quota.Entry, []error) {
	parents := map[string]bool{}
	for _, q := range queues {
		if q == nil {
			continue
		}
		if p, _, _ := unstructured.NestedString(q.Object, "spec", parentField); p != "" && p != q.GetName() {
			parents[p] = true
		}
	}
	var out []quota.Entry
	var errs []error
	for _, q := range queues {
		if q == nil || parents[q.GetName()] {
			continue
		}
		es, err := entries(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", kind, q.GetName(), err))
			continue
		}
		out = append(out, es...)
	}
	sortEntries(out)
	sortErrors(errs)
	return out, errs
}

func volcanoQueueEntries(q *unstructured.Unstructured, key string) ([]quota.Entry, error) {
	read := func(path ...string) (map[string]int64, error) {
		m, _, err := unstructured.NestedMap(q.Object, path...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
		}
		out := map[string]int64{}
		for name, v := range m {
			res, ok := quota.Resource(name, "")
			if !ok {
				continue
			}
			if _, dup := out[res]; dup {
				continue
			}
			n, err := milliOf(v)
			if err != nil {
				return nil, fmt.Errorf("%s[%s]: %w", strings.Join(path, "."), name, err)
			}
			out[res] = n
		}
		return out, nil
	}
	guarantee, err := read("spec", "guarantee", "resource")
	if err != nil {
		return nil, err
	}
	deserved, err := read("spec", "deserved")
	if err != nil {
		return nil, err
	}
	capability, err := read("spec", "capability")
	if err != nil {
		return nil, err
	}
	t := team(q.GetLabels(), q.GetName(), key)
	resources := map[string]bool{}
	for _, m := range []map[string]int64{guarantee, deserved, capability} {
		for r := range m {
			resources[r] = true
		}
	}
	var es []quota.Entry
	for res := range resources {
		e := quota.Entry{Key: quota.Key{Source: quota.SourceVolcano, Object: q.GetName(), Resource: res}, Team: t}
		if g, ok := guarantee[res]; ok {
			e.Milli = g
		} else {
			e.Milli = deserved[res]
		}
		e.LimitMilli = capability[res]
		es = append(es, e)
	}
	return validated(es)
}

// KAIEntries maps NVIDIA KAI scheduler Queues (scheduling.run.ai/v2) to
// entries on any GPU: Milli is spec.resources.gpu.quota (GPUs, possibly
// fractional; -1 or absent states no quota and gives no entry),
// LimitMilli spec.resources.gpu.limit (-1 or absent: none, 0). Only leaf
// queues (no queue names them as spec.parentQueue) give entries, so a
// department's quota is not counted beside its children's. The team is
// the queue's team label, else its name.
func KAIEntries(queues []*unstructured.Unstructured, key string) ([]quota.Entry, []error) {
	return leafQueueEntries(queues, "parentQueue", "kai Queue", func(q *unstructured.Unstructured) ([]quota.Entry, error) {
		e, ok, err := kaiQueueEntry(q, key)
		if !ok || err != nil {
			return nil, err
		}
		return []quota.Entry{e}, nil
	})
}

// errNone marks KAI's -1: nothing stated.
var errNone = errors.New("none")

func kaiValue(gpu map[string]any, field string) (int64, error) {
	v, ok := gpu[field]
	if !ok || v == nil {
		return 0, errNone
	}
	switch x := v.(type) {
	case int64:
		if x == -1 {
			return 0, errNone
		}
	case float64:
		if x == -1 {
			return 0, errNone
		}
	}
	n, err := milliOf(v)
	if err != nil {
		return 0, fmt.Errorf("spec.resources.gpu.%s: %w", field, err)
	}
	return n, nil
}

func kaiQueueEntry(q *unstructured.Unstructured, key string) (quota.Entry, bool, error) {
	gpu, _, err := unstructured.NestedMap(q.Object, "spec", "resources", "gpu")
	if err != nil {
		return quota.Entry{}, false, fmt.Errorf("spec.resources.gpu: %w", err)
	}
	m, err := kaiValue(gpu, "quota")
	if errors.Is(err, errNone) {
		return quota.Entry{}, false, nil
	}
	if err != nil {
		return quota.Entry{}, false, err
	}
	limit, err := kaiValue(gpu, "limit")
	if errors.Is(err, errNone) {
		limit = 0
	} else if err != nil {
		return quota.Entry{}, false, err
	}
	e := quota.Entry{
		Key:        quota.Key{Source: quota.SourceKAI, Object: q.GetName(), Resource: quota.ResourceAnyGPU},
		Team:       team(q.GetLabels(), q.GetName(), key),
		Milli:      m,
		LimitMilli: limit,
	}
	if err := e.Validate(); err != nil {
		return quota.Entry{}, false, err
	}
	return e, true, nil
}
