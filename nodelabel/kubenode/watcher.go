// Package kubenode watches a cluster's nodes for one label key: a lean
// informer over the nodes' metadata only (no status, no images), trimmed
// to the name and that label, for serve's node label recorder.
package kubenode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuledger/gpuledger/nodelabel"
)

// userAgent names the watcher in API server audit logs.
const userAgent = "gpuledger-serve-nodelabels"

var nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Watcher keeps each node's value of one label key. Create it with New,
// start it with Run, read it with Snapshot once WaitForSync returns.
type Watcher struct {
	key     string
	log     *slog.Logger
	client  metadata.Interface
	store   cache.Store
	synced  cache.InformerSynced
	started atomic.Bool
	ready   chan struct{} // closed once store and synced are set
}

// New prepares a watcher of key (a Kubernetes label key) on the nodes of
// the cluster at cfg. Nothing is contacted until Run.
func New(cfg *rest.Config, key string, logger *slog.Logger) (*Watcher, error) {
	if cfg == nil {
		return nil, errors.New("cannot watch node labels: no Kubernetes config")
	}
	if !nodelabel.ValidKey(key) {
		return nil, fmt.Errorf("cannot watch node label %q: not a Kubernetes label key", key)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the Kubernetes client for %s: %w", cfg.Host, err)
	}
	return &Watcher{key: key, log: logger.With("component", "kubenode"), client: c, ready: make(chan struct{})}, nil
}

// Run watches until ctx ends, then returns nil once the informer has
// stopped. Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if w.started.Swap(true) {
		return errors.New("kubenode: Run called twice")
	}
	res := w.client.Resource(nodes)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	if err := inf.SetTransform(w.trim); err != nil {
		return fmt.Errorf("cannot set the node informer's transform: %w", err)
	}
	warned := atomic.Bool{}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) && !warned.Swap(true) {
			w.log.Warn("cannot watch nodes (RBAC: serve needs get, list, watch on nodes); retrying", "err", err)
			return
		}
		w.log.Debug("watch of nodes failed; retrying", "err", err)
	}); err != nil {
		return fmt.Errorf("cannot set the node informer's error handler: %w", err)
	}
	w.store, w.synced = inf.GetStore(), inf.HasSynced
	close(w.ready)
	inf.RunWithContext(ctx)
	return nil
}

// trim keeps a node's name and its value of the key: a node's metadata
// carries many labels and annotations the recorder never reads.
func (w *Watcher) trim(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	t := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion, UID: m.UID}}
	if v, ok := m.Labels[w.key]; ok {
		t.Labels = map[string]string{w.key: v}
	}
	return t, nil
}

// WaitForSync blocks until the informer has delivered its first list of
// nodes, or ctx ends: before then a node not listed yet would read as a
// node that lost its label.
func (w *Watcher) WaitForSync(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.ready:
			if w.synced() {
				return nil
			}
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot sync the nodes: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Snapshot is the nodes now: each labelled node's value of the key, and
// whether a node exists (nodelabel.Recorder's Snapshot). It fails before
// the first list.
func (w *Watcher) Snapshot() (map[string]string, func(string) bool, error) {
	select {
	case <-w.ready:
	default:
		return nil, nil, errors.New("the node informer has not started")
	}
	if !w.synced() {
		return nil, nil, errors.New("the nodes are not listed yet")
	}
	objs := w.store.List()
	labels := make(map[string]string, len(objs))
	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		m, ok := o.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		present[m.Name] = true
		if v, ok := m.Labels[w.key]; ok {
			labels[m.Name] = v
		}
	}
	return labels, func(n string) bool { return present[n] }, nil
}
