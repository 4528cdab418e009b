package kubequota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuledger/gpuledger/quota"
)

// userAgent names the watcher in API server audit logs.
const userAgent = "gpuledger-serve-quota"

// Bounds of the recheck interval: how often a source the API server did
// not serve (or RBAC forbade) is tried again.
const (
	DefaultRecheck = 5 * time.Minute
	MinRecheck     = 100 * time.Millisecond
	MaxRecheck     = time.Hour
)

// probeTimeout bounds one availability probe (a list of one object).
const probeTimeout = 30 * time.Second

// Option configures New.
type Option func(*Watcher)

// WithRecheck sets how often absent or forbidden sources are tried again,
// clamped to [MinRecheck, MaxRecheck]; zero or less keeps DefaultRecheck.
func WithRecheck(d time.Duration) Option {
	return func(w *Watcher) {
		if d > 0 {
			w.recheck = min(max(d, MinRecheck), MaxRecheck)
		}
	}
}

// crdSource is one optional source: its API group, the versions read
// (preferred first) and the resources it needs, all of one version.
type crdSource struct {
	name      string // quota.Source*
	group     string
	versions  []string
	resources []string

	// Set once its informers run (under Watcher.mu).
	version string
	stores  map[string]cache.Store
	synced  []cache.InformerSynced
	// reason is the kind of unavailability last logged ("not served",
	// "forbidden", "failed"), so each is logged once until it changes.
	reason string
}

func sources() []*crdSource {
	return []*crdSource{
		// v1beta2 is the storage version of current Kueue; v1beta1 is
		// still served, and what older releases serve alone.
		{name: quota.SourceKueue, group: "kueue.x-k8s.io", versions: []string{"v1beta2", "v1beta1"},
			resources: []string{"clusterqueues", "localqueues", "resourceflavors"}},
		{name: quota.SourceVolcano, group: "scheduling.volcano.sh", versions: []string{"v1beta1"}, resources: []string{"queues"}},
		{name: quota.SourceKAI, group: "scheduling.run.ai", versions: []string{"v2"}, resources: []string{"queues"}},
	}
}

// Watcher keeps the cluster's GPU quota entries current. Create it with
// New, start it with Run, read it with Snapshot.
type Watcher struct {
	key     string
	log     *slog.Logger
	recheck time.Duration
	core    rest.Interface
	dyn     dynamic.Interface

	namespaces, quotas cache.Store
	coreSynced         []cache.InformerSynced
	coreInformers      []cache.SharedIndexInformer

	started, probed atomic.Bool
	// rechecks counts the probe rounds (tests wait on it).
	rechecks atomic.Int64
	// dirty is set by informer events and cleared by the rebuild.
	dirty atomic.Bool

	mu      sync.Mutex
	sources []*crdSource
	built   bool
	snap    []quota.Entry
	lastErr string // the mapping errors last logged
}

// New prepares a watcher for the cluster at cfg. teamLabel is the label
// key on namespaces and queues naming the team ("" is tenancy's
// default, "team"). Nothing is contacted until Run.
func New(cfg *rest.Config, teamLabel string, logger *slog.Logger, opts ...Option) (*Watcher, error) {
	if cfg == nil {
		return nil, errors.New("cannot watch GPU quotas: no Kubernetes config")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{key: teamLabel, log: logger.With("component", "kubequota"), recheck: DefaultRecheck, sources: sources()}
	for _, o := range opts {
		o(w)
	}
	// API warnings (a deprecated Kueue version, say) come with every
	// request; client-go would print each through klog.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = &onceWarnings{log: w.log}
	var err error
	if w.core, err = newCoreClient(cfg); err != nil {
		return nil, err
	}
	dcfg := rest.CopyConfig(cfg)
	dcfg.UserAgent = userAgent
	if w.dyn, err = dynamic.NewForConfig(dcfg); err != nil {
		return nil, fmt.Errorf("cannot create the Kubernetes client for %s: %w", cfg.Host, err)
	}
	w.dirty.Store(true)
	return w, nil
}

// newCoreClient is a core/v1 REST client over a scheme of core/v1 alone,
// in protobuf (see collector/kubemeta: the generated clientset would link
// every API group).
func newCoreClient(cfg *rest.Config) (rest.Interface, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("cannot register core/v1 types: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// Run watches until ctx ends, then returns nil once the informers have
// stopped. It probes the optional sources at once and every recheck
// interval until each runs. Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if w.started.Swap(true) {
		return errors.New("kubequota: Run called twice")
	}
	var running sync.WaitGroup
	defer running.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := func(inf cache.SharedIndexInformer) { running.Go(func() { inf.RunWithContext(ctx) }) }

	for _, r := range []struct {
		name  string
		obj   runtime.Object
		trim  cache.TransformFunc
		store *cache.Store
	}{
		{"namespaces", &corev1.Namespace{}, trimNamespace, &w.namespaces},
		{"resourcequotas", &corev1.ResourceQuota{}, trimResourceQuota, &w.quotas},
	} {
		lw := cache.ToListWatcherWithWatchListSemantics(
			cache.NewListWatchFromClient(w.core, r.name, metav1.NamespaceAll, fields.Everything()), w.core)
		inf, synced, err := w.informer(lw, r.obj, r.trim, "core "+r.name)
		if err != nil {
			return err
		}
		w.mu.Lock()
		*r.store = inf.GetStore()
		w.coreSynced = append(w.coreSynced, synced)
		w.coreInformers = append(w.coreInformers, inf)
		w.mu.Unlock()
		start(inf)
	}

	tick := time.NewTicker(w.recheck)
	defer tick.Stop()
	for {
		for _, s := range w.pending() {
			infs, err := w.probe(ctx, s)
			if err != nil {
				return err
			}
			for _, inf := range infs {
				start(inf)
			}
		}
		w.probed.Store(true)
		w.rechecks.Add(1)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// pending returns the sources not running yet.
func (w *Watcher) pending() []*crdSource {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*crdSource
	for _, s := range w.sources {
		if s.version == "" {
			out = append(out, s)
		}
	}
	return out
}

// probe lists one object of each of s's resources, preferred version
// first. When every one answers, it creates s's informers and returns
// them; otherwise it logs why s is not recorded (once per reason) and
// returns none. Only a failure to create an informer is an error.
func (w *Watcher) probe(ctx context.Context, s *crdSource) ([]cache.SharedIndexInformer, error) {
	version, kind, reason := "", "", ""
	for _, v := range s.versions {
		kind, reason = w.probeVersion(ctx, s, v)
		if ctx.Err() != nil {
			return nil, nil
		}
		if kind == "" {
			version = v
			break
		}
		if kind != "not served" {
			break
		}
	}
	if version == "" {
		if kind == "not served" {
			reason = fmt.Sprintf("the API server does not serve %s (%s)", s.group, versionsString(s))
		}
		w.mu.Lock()
		same := s.reason == kind
		s.reason = kind
		w.mu.Unlock()
		if !same {
			// A scheduler that is not installed is normal; a forbidden or
			// failing one is something to fix.
			level := slog.LevelWarn
			if kind == "not served" {
				level = slog.LevelInfo
			}
			w.log.Log(ctx, level, s.name+" quotas not recorded: "+reason+"; rechecking", "every", w.recheck)
		}
		return nil, nil
	}

	stores := map[string]cache.Store{}
	var synced []cache.InformerSynced
	var infs []cache.SharedIndexInformer
	for _, r := range s.resources {
		gvr := schema.GroupVersionResource{Group: s.group, Version: version, Resource: r}
		ri := w.dyn.Resource(gvr)
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return ri.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return ri.Watch(ctx, o)
			},
		}, w.dyn)
		inf, sync, err := w.informer(lw, &unstructured.Unstructured{}, trimUnstructured, gvrString(gvr))
		if err != nil {
			return nil, err
		}
		stores[r] = inf.GetStore()
		synced = append(synced, sync)
		infs = append(infs, inf)
	}
	w.mu.Lock()
	s.version, s.stores, s.synced, s.reason = version, stores, synced, ""
	w.mu.Unlock()
	w.dirty.Store(true)
	w.log.Info(s.name+" quotas recorded", "api", s.group+"/"+version)
	return infs, nil
}

// probeVersion lists one object of each of s's resources at version v:
// kind is "" when all answer, else "not served", "forbidden" or "failed",
// with reason saying what failed.
func (w *Watcher) probeVersion(ctx context.Context, s *crdSource, v string) (kind, reason string) {
	for _, r := range s.resources {
		gvr := schema.GroupVersionResource{Group: s.group, Version: v, Resource: r}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := w.dyn.Resource(gvr).List(pctx, metav1.ListOptions{Limit: 1})
		cancel()
		switch {
		case err == nil:
		case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			return "not served", "the API server does not serve " + gvrString(gvr)
		case apierrors.IsForbidden(err):
			return "forbidden", fmt.Sprintf("RBAC forbids listing %s: %v", gvrString(gvr), err)
		default:
			return "failed", fmt.Sprintf("cannot list %s: %v", gvrString(gvr), err)
		}
	}
	return "", ""
}

func gvrString(g schema.GroupVersionResource) string {
	return g.Resource + "." + g.Group + "/" + g.Version
}

func versionsString(s *crdSource) string {
	return "versions " + strings.Join(s.versions, ", ")
}

// informer creates an informer whose events mark the snapshot dirty and
// whose watch errors go to the debug log (client-go's default handler
// would log each retry through klog).
func (w *Watcher) informer(lw cache.ListerWatcher, obj runtime.Object, trim cache.TransformFunc, what string) (cache.SharedIndexInformer, cache.InformerSynced, error) {
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	if err := inf.SetTransform(trim); err != nil {
		return nil, nil, fmt.Errorf("cannot set the %s informer's transform: %w", what, err)
	}
	warned := atomic.Bool{}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if (apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) && !warned.Swap(true) {
			w.log.Warn("cannot watch "+what+"; retrying", "err", err)
			return
		}
		w.log.Debug("watch of "+what+" failed; retrying", "err", err)
	}); err != nil {
		return nil, nil, fmt.Errorf("cannot set the %s informer's error handler: %w", what, err)
	}
	mark := func() { w.dirty.Store(true) }
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot watch %s: %w", what, err)
	}
	return inf, reg.HasSynced, nil
}

// HasSynced reports whether the first probe of every optional source is
// done and every running informer has delivered its first list.
func (w *Watcher) HasSynced() bool {
	if !w.probed.Load() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.coreSynced {
		if !f() {
			return false
		}
	}
	for _, s := range w.sources {
		for _, f := range s.synced {
			if !f() {
				return false
			}
		}
	}
	return true
}

// Unobserved names the optional sources whose objects cannot be read now:
// not probed yet, forbidden, or failing. A source the API server does not
// serve is observed (it has no quota); so is a running one.
func (w *Watcher) Unobserved() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.sources {
		if s.version == "" && s.reason != "not served" {
			out = append(out, s.name)
		}
	}
	return out
}

// WaitForSync waits until HasSynced or ctx ends (the error).
func (w *Watcher) WaitForSync(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !w.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot sync the GPU quota objects: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Snapshot returns the current entries, sorted by source, object and
// resource; invalid objects are left out (and logged when the set of
// errors changes). The slice is the caller's.
func (w *Watcher) Snapshot() []quota.Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Clearing the flag before reading the stores means an event that
	// lands during the rebuild marks the next snapshot dirty again.
	if !w.built || w.dirty.Swap(false) {
		w.dirty.Store(false)
		w.snap, w.built = w.build(), true
	}
	return slices.Clone(w.snap)
}

// build maps the cached objects (w.mu held).
func (w *Watcher) build() []quota.Entry {
	nsLabels := map[string]map[string]string{}
	var rqs []*corev1.ResourceQuota
	if w.namespaces != nil {
		for _, o := range w.namespaces.List() {
			if ns, ok := o.(*corev1.Namespace); ok {
				nsLabels[ns.Name] = ns.Labels
			}
		}
	}
	if w.quotas != nil {
		for _, o := range w.quotas.List() {
			if rq, ok := o.(*corev1.ResourceQuota); ok {
				rqs = append(rqs, rq)
			}
		}
	}
	out, errs := ResourceQuotaEntries(rqs, nsLabels, w.key)
	for _, s := range w.sources {
		if s.version == "" {
			continue
		}
		list := func(r string) []*unstructured.Unstructured {
			var us []*unstructured.Unstructured
			for _, o := range s.stores[r].List() {
				if u, ok := o.(*unstructured.Unstructured); ok {
					us = append(us, u)
				}
			}
			return us
		}
		var es []quota.Entry
		var e []error
		switch s.name {
		case quota.SourceKueue:
			es, e = KueueEntries(list("clusterqueues"), list("localqueues"), list("resourceflavors"), nsLabels, w.key)
		case quota.SourceVolcano:
			es, e = VolcanoEntries(list("queues"), w.key)
		case quota.SourceKAI:
			es, e = KAIEntries(list("queues"), w.key)
		}
		out = append(out, es...)
		errs = append(errs, e...)
	}
	sortEntries(out)
	if msg := errors.Join(errs...); msg == nil {
		w.lastErr = ""
	} else if msg.Error() != w.lastErr {
		w.lastErr = msg.Error()
		for _, err := range errs {
			w.log.Warn("GPU quota object not recorded", "err", err)
		}
	}
	return out
}

// trimNamespace keeps what the mapping reads: name and labels.
func trimNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns.Name, Labels: ns.Labels, ResourceVersion: ns.ResourceVersion, UID: ns.UID,
	}}, nil
}

// trimResourceQuota keeps the quota's scopes and its GPU hard limits.
func trimResourceQuota(obj any) (any, error) {
	rq, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return obj, nil
	}
	t := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: rq.Name, Namespace: rq.Namespace, ResourceVersion: rq.ResourceVersion, UID: rq.UID},
		Spec:       corev1.ResourceQuotaSpec{Scopes: rq.Spec.Scopes, ScopeSelector: rq.Spec.ScopeSelector},
	}
	for name, q := range rq.Spec.Hard {
		if ext, ok := strings.CutPrefix(string(name), requestsPrefix); ok && strings.HasPrefix(ext, "nvidia.com/") {
			if t.Spec.Hard == nil {
				t.Spec.Hard = corev1.ResourceList{}
			}
			t.Spec.Hard[name] = q
		}
	}
	return t, nil
}

// trimUnstructured keeps identity, labels and spec: status, annotations
// (kubectl's last-applied copy) and managed fields are most of a queue's
// size and never read.
func trimUnstructured(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	t := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
	}}
	t.SetName(u.GetName())
	t.SetNamespace(u.GetNamespace())
	t.SetResourceVersion(u.GetResourceVersion())
	t.SetUID(u.GetUID())
	t.SetLabels(u.GetLabels())
	if spec, ok := u.Object["spec"]; ok {
		t.Object["spec"] = spec
	}
	return t, nil
}

// maxWarnings bounds the distinct API warnings remembered (and logged).
const maxWarnings = 64

// onceWarnings logs each distinct API server warning once.
type onceWarnings struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
}

func (o *onceWarnings) HandleWarningHeader(_ int, _ string, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[text] || len(o.seen) >= maxWarnings {
		return
	}
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	o.seen[text] = true
	o.log.Info("the API server warns: " + text)
}
