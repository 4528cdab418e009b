package kubemeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuledger/gpuledger/attribution"
)

// syncTimeout bounds the wait for the first full list of pods, namespaces
// and the node.
const syncTimeout = 30 * time.Second

// InformerSource is a Source fed by client-go informers scoped to one node:
// the pods bound to it, every namespace and the node object itself. Its
// snapshot is rebuilt only after an informer event, so a cycle that finds
// nothing changed costs a mutex and an atomic load.
//
// RBAC, read-only, cluster-wide (namespaces and nodes are cluster-scoped and
// pods are watched in all namespaces):
//
//   - apiGroups: [""]
//     resources: ["pods", "namespaces", "nodes"]
//     verbs: ["get", "list", "watch"]
//
// and, optionally, the ResourceSlice rule of ResourceSliceWatch.
type InformerSource struct {
	node string
	log  *slog.Logger

	stop      context.CancelFunc
	running   sync.WaitGroup // the informers' goroutines
	informers []cache.SharedIndexInformer

	// The informers' stores, keyed as client-go keys objects. slices is
	// nil when no ResourceSlice watch was given.
	pods, namespaces, nodes, slices cache.Store
	// slicesUnavailable is set while the ResourceSlice API answers 404 or
	// 403; slicesFailed once any attempt failed (resourceslices.go).
	slicesUnavailable, slicesFailed atomic.Bool

	// dirty is set by informer event handlers and cleared by the rebuild.
	dirty atomic.Bool

	mu    sync.Mutex
	built bool
	snap  attribution.Metadata
}

var _ Source = (*InformerSource)(nil)

// Watches are the list-and-watch streams an InformerSource reads.
// ResourceSlices is optional (ResourceSliceWatch): without it the source
// reports no DRA devices.
type Watches struct {
	Pods, Namespaces, Nodes cache.ListerWatcher
	ResourceSlices          cache.ListerWatcher
}

// NodeWatches scopes the watches to one node on the API server's side:
// pods by spec.nodeName, the node by metadata.name, and every namespace
// (a pod's namespace labels name its team).
func NodeWatches(c cache.Getter, nodeName string) Watches {
	lw := func(resource string, sel fields.Selector) cache.ListerWatcher {
		return cache.ToListWatcherWithWatchListSemantics(
			cache.NewListWatchFromClient(c, resource, metav1.NamespaceAll, sel), c)
	}
	return Watches{
		Pods:       lw("pods", fields.OneTermEqualSelector("spec.nodeName", nodeName)),
		Namespaces: lw("namespaces", fields.Everything()),
		Nodes:      lw("nodes", fields.OneTermEqualSelector("metadata.name", nodeName)),
	}
}

// NewInformerSource starts the informers and waits (at most 30 s, or until
// ctx ends) for their first list. The informers run until ctx is done or
// Close is called.
func NewInformerSource(ctx context.Context, w Watches, nodeName string, log *slog.Logger) (*InformerSource, error) {
	if nodeName == "" {
		return nil, errors.New("cannot watch Kubernetes metadata: node name is empty")
	}
	if w.Pods == nil || w.Namespaces == nil || w.Nodes == nil {
		return nil, errors.New("cannot watch Kubernetes metadata: a watch is missing")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	runCtx, stop := context.WithCancel(ctx)
	s := &InformerSource{
		stop: stop,
		node: nodeName,
		log:  log.With("source", "kubemeta", "node", nodeName),
	}
	s.dirty.Store(true)
	var synced []cache.InformerSynced
	for _, r := range []struct {
		name  string
		lw    cache.ListerWatcher
		obj   runtime.Object
		store *cache.Store
	}{
		{"pods", w.Pods, &corev1.Pod{}, &s.pods},
		{"namespaces", w.Namespaces, &corev1.Namespace{}, &s.namespaces},
		{"nodes", w.Nodes, &corev1.Node{}, &s.nodes},
	} {
		inf := cache.NewSharedIndexInformer(r.lw, r.obj, 0, cache.Indexers{})
		// Managed fields are most of a pod object's size and we never read them.
		if err := inf.SetTransform(stripManagedFields); err != nil {
			stop()
			return nil, fmt.Errorf("cannot set the %s informer's transform: %w", r.name, err)
		}
		reg, err := inf.AddEventHandler(s.handler())
		if err != nil {
			stop()
			return nil, fmt.Errorf("cannot watch %s: %w", r.name, err)
		}
		// The registration has synced once the handler saw the initial list.
		synced = append(synced, reg.HasSynced)
		*r.store = inf.GetStore()
		s.informers = append(s.informers, inf)
	}
	if w.ResourceSlices != nil {
		sync, err := s.watchResourceSlices(w.ResourceSlices)
		if err != nil {
			stop()
			return nil, fmt.Errorf("cannot watch resourceslices: %w", err)
		}
		synced = append(synced, sync)
	}
	for _, inf := range s.informers {
		s.running.Go(func() { inf.RunWithContext(runCtx) })
	}

	waitCtx, cancel := context.WithTimeout(runCtx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(waitCtx.Done(), synced...) {
		s.Close()
		return nil, fmt.Errorf("cannot sync Kubernetes metadata for node %s: %w", nodeName, waitCtx.Err())
	}
	if _, ok, _ := s.nodes.GetByKey(nodeName); !ok {
		s.Close()
		return nil, fmt.Errorf("cannot find node %s", nodeName)
	}
	return s, nil
}

// Close stops the informers and waits for them to exit.
func (s *InformerSource) Close() {
	s.stop()
	s.running.Wait()
}

// stripManagedFields drops metadata.managedFields before an object enters
// the cache.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

func (s *InformerSource) handler() cache.ResourceEventHandler {
	mark := func() { s.dirty.Store(true) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	}
}

// Snapshot returns the node's metadata. The result is shared between
// callers until the next change and must not be modified.
func (s *InformerSource) Snapshot(context.Context) (attribution.Metadata, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Clearing the flag before reading the stores means an event that
	// lands during the rebuild marks the next snapshot dirty again.
	if s.built && !s.dirty.Swap(false) {
		return s.snap, nil
	}
	s.dirty.Store(false)
	s.snap, s.built = s.build(), true
	return s.snap, nil
}

// nodeLabels returns the node's labels; a node deleted while the collector
// runs leaves them empty rather than failing every cycle.
func (s *InformerSource) nodeLabels() map[string]string {
	obj, ok, _ := s.nodes.GetByKey(s.node) // a thread-safe store's lookup cannot fail
	n, isNode := obj.(*corev1.Node)
	if !ok || !isNode {
		s.log.Warn("node object not found; node labels are empty")
		return nil
	}
	return n.Labels
}
