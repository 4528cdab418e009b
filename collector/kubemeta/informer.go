package kubemeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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
type InformerSource struct {
	node string
	log  *slog.Logger

	stop      context.CancelFunc
	factories []informers.SharedInformerFactory

	pods       corelisters.PodLister
	namespaces corelisters.NamespaceLister
	nodes      corelisters.NodeLister

	// dirty is set by informer event handlers and cleared by the rebuild.
	dirty atomic.Bool

	mu    sync.Mutex
	built bool
	snap  attribution.Metadata
}

var _ Source = (*InformerSource)(nil)

// NewInformerSource starts the informers and waits (at most 30 s, or until
// ctx ends) for their first list. The informers run until ctx is done or
// Close is called.
func NewInformerSource(ctx context.Context, client kubernetes.Interface, nodeName string, log *slog.Logger) (*InformerSource, error) {
	if nodeName == "" {
		return nil, errors.New("cannot watch Kubernetes metadata: node name is empty")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	runCtx, stop := context.WithCancel(ctx)
	podF := scopedFactory(client, "spec.nodeName", nodeName)
	nodeF := scopedFactory(client, "metadata.name", nodeName)
	nsF := informers.NewSharedInformerFactory(client, 0)

	s := &InformerSource{
		stop:       stop,
		factories:  []informers.SharedInformerFactory{podF, nodeF, nsF},
		node:       nodeName,
		log:        log.With("source", "kubemeta", "node", nodeName),
		pods:       podF.Core().V1().Pods().Lister(),
		namespaces: nsF.Core().V1().Namespaces().Lister(),
		nodes:      nodeF.Core().V1().Nodes().Lister(),
	}
	s.dirty.Store(true)
	var synced []cache.InformerSynced
	for name, inf := range map[string]cache.SharedIndexInformer{
		"pods":       podF.Core().V1().Pods().Informer(),
		"namespaces": nsF.Core().V1().Namespaces().Informer(),
		"nodes":      nodeF.Core().V1().Nodes().Informer(),
	} {
		// Managed fields are most of a pod object's size and we never read them.
		if err := inf.SetTransform(stripManagedFields); err != nil {
			stop()
			return nil, fmt.Errorf("cannot set the %s informer's transform: %w", name, err)
		}
		reg, err := inf.AddEventHandler(s.handler())
		if err != nil {
			stop()
			return nil, fmt.Errorf("cannot watch %s: %w", name, err)
		}
		// The registration has synced once the handler saw the initial list.
		synced = append(synced, reg.HasSynced)
	}
	for _, f := range s.factories {
		f.Start(runCtx.Done())
	}

	waitCtx, cancel := context.WithTimeout(runCtx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(waitCtx.Done(), synced...) {
		s.Close()
		return nil, fmt.Errorf("cannot sync Kubernetes metadata for node %s: %w", nodeName, waitCtx.Err())
	}
	if _, err := s.nodes.Get(nodeName); err != nil {
		s.Close()
		return nil, fmt.Errorf("cannot find node %s: %w", nodeName, err)
	}
	return s, nil
}

// Close stops the informers and waits for them to exit.
func (s *InformerSource) Close() {
	s.stop()
	for _, f := range s.factories {
		f.Shutdown()
	}
}

// scopedFactory returns an informer factory listing only the objects whose
// field equals value.
func scopedFactory(client kubernetes.Interface, field, value string) informers.SharedInformerFactory {
	sel := fields.OneTermEqualSelector(field, value).String()
	return informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
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
	// Clearing the flag before reading the listers means an event that
	// lands during the rebuild marks the next snapshot dirty again.
	if s.built && !s.dirty.Swap(false) {
		return s.snap, nil
	}
	s.dirty.Store(false)
	m, err := s.build()
	if err != nil {
		s.dirty.Store(true)
		return attribution.Metadata{}, err
	}
	s.snap, s.built = m, true
	return m, nil
}

// nodeLabels returns the node's labels; a node deleted while the collector
// runs leaves them empty rather than failing every cycle.
func (s *InformerSource) nodeLabels() (map[string]string, error) {
	n, err := s.nodes.Get(s.node)
	if apierrors.IsNotFound(err) {
		s.log.Warn("node object not found; node labels are empty")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot get node %s from the cache: %w", s.node, err)
	}
	return n.Labels, nil
}
