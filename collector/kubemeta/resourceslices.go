package kubemeta

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuledger/gpuledger/attribution"
)

// ResourceSliceWatch watches the DRA ResourceSlices (resource.k8s.io/v1)
// published for one node, scoped on the API server's side by
// spec.nodeName, as dcgm-exporter scopes its DRA support. Slices that a
// driver publishes for several nodes (spec.nodeSelector, spec.allNodes)
// describe network-attached devices, not this node's GPUs, and are not
// watched. c must be a client for resource.k8s.io/v1 (NewResourceClient).
//
// RBAC, read-only, cluster-wide (ResourceSlices are cluster-scoped):
//
//   - apiGroups: ["resource.k8s.io"]
//     resources: ["resourceslices"]
//     verbs: ["get", "list", "watch"]
func ResourceSliceWatch(c cache.Getter, nodeName string) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(
		cache.NewListWatchFromClient(c, "resourceslices", metav1.NamespaceAll,
			fields.OneTermEqualSelector("spec.nodeName", nodeName)), c)
}

// watchResourceSlices adds the ResourceSlice informer. It returns when its
// cache counts as synced: after its first list, or after the first failed
// attempt, whatever the cause. DRA is optional: a cluster without it (404),
// a collector without the RBAC rule (403), or a ResourceSlice API that
// fails while pods can be read must not keep the collector from starting;
// it reports no DRA devices meanwhile. The informer keeps retrying with its
// backoff, so granting the rule later needs no restart.
func (s *InformerSource) watchResourceSlices(lw cache.ListerWatcher) (cache.InformerSynced, error) {
	inf := cache.NewSharedIndexInformer(lw, &resourcev1.ResourceSlice{}, 0, cache.Indexers{})
	if err := inf.SetTransform(stripManagedFields); err != nil {
		return nil, err
	}
	if err := inf.SetWatchErrorHandlerWithContext(s.resourceSliceError); err != nil {
		return nil, err
	}
	mark := func() {
		s.dirty.Store(true)
		if s.slicesUnavailable.Swap(false) {
			s.log.Info("ResourceSlices readable again; reporting DRA devices")
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	})
	if err != nil {
		return nil, err
	}
	s.slices = inf.GetStore()
	s.informers = append(s.informers, inf)
	return func() bool { return reg.HasSynced() || s.slicesFailed.Load() }, nil
}

// resourceSliceError replaces client-go's default handler, which would log
// every retry against a cluster without DRA through klog. An absent or
// forbidden API is said once; other errors are transient and the
// reflector retries them.
func (s *InformerSource) resourceSliceError(_ context.Context, _ *cache.Reflector, err error) {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		s.slicesFailed.Store(true)
	}
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		if !s.slicesUnavailable.Swap(true) {
			s.log.Warn("cannot watch ResourceSlices (resource.k8s.io/v1); reporting no DRA devices, DRA claims stay unallocated", "err", err)
		}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// A watch the server closed; the reflector resumes it.
	default:
		s.log.Debug("ResourceSlice watch failed; retrying", "err", err)
	}
}

// draDevices flattens the cached ResourceSlices into devices, sorted by
// driver, pool and name. A pool may span several slices; while a driver
// republishes it, slices of an older generation may linger, and like the
// scheduler we trust only the newest generation of each pool.
func draDevices(objs []any, nodeName string) []attribution.DRADevice {
	type poolKey struct{ driver, pool string }
	newest := map[poolKey]int64{}
	var live []*resourcev1.ResourceSlice
	for _, obj := range objs {
		rs, ok := obj.(*resourcev1.ResourceSlice)
		// The field selector scopes the watch; checking again keeps a
		// stray object (or a server that ignores selectors) out.
		if !ok || rs.Spec.NodeName == nil || *rs.Spec.NodeName != nodeName {
			continue
		}
		live = append(live, rs)
		k := poolKey{rs.Spec.Driver, rs.Spec.Pool.Name}
		if g, seen := newest[k]; !seen || rs.Spec.Pool.Generation > g {
			newest[k] = rs.Spec.Pool.Generation
		}
	}
	var out []attribution.DRADevice
	for _, rs := range live {
		if rs.Spec.Pool.Generation < newest[poolKey{rs.Spec.Driver, rs.Spec.Pool.Name}] {
			continue
		}
		for _, d := range rs.Spec.Devices {
			out = append(out, attribution.DRADevice{
				Driver:     rs.Spec.Driver,
				Pool:       rs.Spec.Pool.Name,
				Name:       d.Name,
				Attributes: deviceAttributes(d.Attributes),
			})
		}
	}
	slices.SortFunc(out, func(a, b attribution.DRADevice) int {
		return cmp.Or(cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// deviceAttributes turns a device's typed attributes into text keyed by
// the name without its domain: drivers qualify names
// ("gpu.nvidia.com/uuid") or leave them bare ("uuid", the driver's own
// domain implied), and attribution looks them up one way. Where both forms
// name one attribute the bare one (the driver's own) wins, then the first
// qualified name in sorted order, so the result never depends on map order.
func deviceAttributes(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute) map[string]string {
	if len(attrs) == 0 {
		return nil
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, string(name))
	}
	qualified := func(n string) int { return strings.Count(n, "/") }
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(qualified(a), qualified(b)), cmp.Compare(a, b))
	})
	out := make(map[string]string, len(attrs))
	for _, name := range names {
		v, ok := attributeText(attrs[resourcev1.QualifiedName(name)])
		if !ok {
			continue
		}
		short := name[strings.LastIndexByte(name, '/')+1:]
		if _, taken := out[short]; !taken {
			out[short] = v
		}
	}
	return out
}

// attributeText is an attribute's one value as text; ok is false when the
// attribute carries none (a type newer than this collector).
func attributeText(a resourcev1.DeviceAttribute) (string, bool) {
	switch {
	case a.StringValue != nil:
		return *a.StringValue, true
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10), true
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue), true
	case a.VersionValue != nil:
		return *a.VersionValue, true
	}
	return "", false
}
