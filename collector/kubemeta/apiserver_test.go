package kubemeta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// apiServer is a small Kubernetes API server for core/v1 pods, namespaces
// and nodes and resource.k8s.io/v1 ResourceSlices over real HTTP: list, watch (classic and the streaming
// sendInitialEvents form client-go uses by default) and server-side field
// selectors on the fields the collector scopes by. Like a real API server
// it answers in protobuf when the client accepts it (ours asks for it
// first) and in JSON otherwise, with the wire framing of each. The tests
// drive the production client, codecs and watches against it.
type apiServer struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	rv        int
	objs      map[string]map[string]runtime.Object // resource -> key -> object
	watchers  map[string][]*watcher
	selectors map[string][]string // resource -> field selectors received
	forbidden map[string]bool
	jsonOnly  bool            // answer JSON even to clients that accept protobuf
	noDRA     bool            // serve no resource.k8s.io group: 404, as a cluster without DRA
	broken    map[string]bool // resources that answer 500
}

type watcher struct {
	sel    fields.Selector
	events chan watchEvent
}

type watchEvent struct {
	typ watch.EventType
	obj runtime.Object
}

func newAPIServer(t *testing.T, objs ...runtime.Object) *apiServer {
	t.Helper()
	s := &apiServer{
		t:         t,
		objs:      map[string]map[string]runtime.Object{"pods": {}, "namespaces": {}, "nodes": {}, "resourceslices": {}},
		watchers:  map[string][]*watcher{},
		selectors: map[string][]string{},
		forbidden: map[string]bool{},
		broken:    map[string]bool{},
	}
	for _, o := range objs {
		s.put(o)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// client returns the production core/v1 client pointed at the server.
func (s *apiServer) client() rest.Interface {
	s.t.Helper()
	c, err := NewClient(&rest.Config{Host: s.srv.URL})
	if err != nil {
		s.t.Fatalf("NewClient: %v", err)
	}
	return c
}

// resourceClient returns the production resource.k8s.io/v1 client pointed
// at the server.
func (s *apiServer) resourceClient() rest.Interface {
	s.t.Helper()
	c, err := NewResourceClient(&rest.Config{Host: s.srv.URL})
	if err != nil {
		s.t.Fatalf("NewResourceClient: %v", err)
	}
	return c
}

// withoutDRA makes the server answer 404 for the resource.k8s.io group, as
// a cluster whose API server does not serve it.
func (s *apiServer) withoutDRA() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noDRA = true
}

// answerJSONOnly makes the server ignore the client's preference for
// protobuf, as servers of aggregated or older APIs may.
func (s *apiServer) answerJSONOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jsonOnly = true
}

// breakResource makes the server fail every request for resource with 500.
func (s *apiServer) breakResource(resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken[resource] = true
}

func (s *apiServer) forbid(resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[resource] = true
}

func (s *apiServer) selectorsSeen() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.selectors {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// groups maps the served resources to their group versions.
var groups = map[string]schema.GroupVersion{
	"pods": corev1.SchemeGroupVersion, "namespaces": corev1.SchemeGroupVersion, "nodes": corev1.SchemeGroupVersion,
	"resourceslices": resourcev1.SchemeGroupVersion,
}

// emptyList returns an empty list of a served resource.
func emptyList(res string) runtime.Object {
	return map[string]runtime.Object{"pods": &corev1.PodList{}, "namespaces": &corev1.NamespaceList{},
		"nodes": &corev1.NodeList{}, "resourceslices": &resourcev1.ResourceSliceList{}}[res]
}

// emptyObject returns an empty object of a served resource.
func emptyObject(res string) runtime.Object {
	return map[string]runtime.Object{"pods": &corev1.Pod{}, "namespaces": &corev1.Namespace{},
		"nodes": &corev1.Node{}, "resourceslices": &resourcev1.ResourceSlice{}}[res]
}

func resourceOf(o runtime.Object) string {
	switch o.(type) {
	case *corev1.Pod:
		return "pods"
	case *corev1.Namespace:
		return "namespaces"
	case *corev1.Node:
		return "nodes"
	case *resourcev1.ResourceSlice:
		return "resourceslices"
	}
	panic(fmt.Sprintf("test API server: unexpected %T", o)) // a bug in the test itself
}

func key(o runtime.Object) string {
	a, _ := meta.Accessor(o)
	if a.GetNamespace() == "" {
		return a.GetName()
	}
	return a.GetNamespace() + "/" + a.GetName()
}

// fieldSet is what a field selector may match on, as the API server offers.
func fieldSet(o runtime.Object) fields.Set {
	a, _ := meta.Accessor(o)
	set := fields.Set{"metadata.name": a.GetName(), "metadata.namespace": a.GetNamespace()}
	switch o := o.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
	case *resourcev1.ResourceSlice:
		if o.Spec.NodeName != nil {
			set["spec.nodeName"] = *o.Spec.NodeName
		}
	}
	return set
}

// put creates or replaces an object and tells the watchers.
func (s *apiServer) put(o runtime.Object) {
	o = o.DeepCopyObject()
	res := resourceOf(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	a, _ := meta.Accessor(o)
	a.SetResourceVersion(strconv.Itoa(s.rv))
	typ := "ADDED"
	if _, ok := s.objs[res][key(o)]; ok {
		typ = "MODIFIED"
	}
	s.objs[res][key(o)] = o
	s.notify(res, typ, o)
}

func (s *apiServer) delete(o runtime.Object) {
	res := resourceOf(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objs[res][key(o)]
	if !ok {
		s.t.Fatalf("delete %s: not found", key(o))
	}
	delete(s.objs[res], key(o))
	s.rv++
	old = old.DeepCopyObject()
	a, _ := meta.Accessor(old)
	a.SetResourceVersion(strconv.Itoa(s.rv))
	s.notify(res, "DELETED", old)
}

// notify must be called with s.mu held.
func (s *apiServer) notify(res, typ string, o runtime.Object) {
	for _, w := range s.watchers[res] {
		if w.sel.Matches(fieldSet(o)) {
			w.events <- watchEvent{watch.EventType(typ), o.DeepCopyObject()}
		}
	}
}

// codec picks the serializer for a request as the API server does: the
// first type of the Accept header that it can write.
func (s *apiServer) codec(r *http.Request) runtime.SerializerInfo {
	codecs, err := apiCodecs()
	if err != nil {
		s.t.Fatalf("codecs: %v", err)
	}
	s.mu.Lock()
	jsonOnly := s.jsonOnly
	s.mu.Unlock()
	if !jsonOnly && strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		return info
	}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return info
}

// encoder writes objects of a served resource with their apiVersion and
// kind.
func encoder(info runtime.SerializerInfo, res string) runtime.Encoder {
	codecs, _ := apiCodecs()
	return codecs.EncoderForVersion(info.Serializer, groups[res])
}

// resourceOfPath returns the resource a request path names, as the API
// server routes it: /api/v1/<res> for core, /apis/<group>/<version>/<res>.
func (s *apiServer) resourceOfPath(path string) (string, bool) {
	var res, gv string
	if r, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		res, gv = r, "v1"
	} else if r, ok := strings.CutPrefix(path, "/apis/"); ok {
		i := strings.LastIndexByte(r, '/')
		if i < 0 {
			return "", false
		}
		res, gv = r[i+1:], r[:i]
	}
	want, known := groups[res]
	if !known || want.String() != gv {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return res, !(s.noDRA && want.Group == resourcev1.GroupName)
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	res, ok := s.resourceOfPath(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	sel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.selectors[res] = append(s.selectors[res], q.Get("fieldSelector"))
	forbidden, broken := s.forbidden[res], s.broken[res]
	s.mu.Unlock()
	if broken {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError,
			Message: "etcdserver: request timed out",
		})
		return
	}
	if forbidden {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
			Message: res + " is forbidden",
		})
		return
	}
	if q.Get("watch") == "true" {
		s.watch(w, r, res, sel, q.Get("sendInitialEvents") == "true")
		return
	}
	s.list(w, r, res, sel)
}

func (s *apiServer) list(w http.ResponseWriter, r *http.Request, res string, sel fields.Selector) {
	list := emptyList(res)
	s.mu.Lock()
	var items []runtime.Object
	for _, o := range s.objs[res] {
		if sel.Matches(fieldSet(o)) {
			items = append(items, o.DeepCopyObject())
		}
	}
	rv := strconv.Itoa(s.rv)
	s.mu.Unlock()
	if err := meta.SetList(list, items); err != nil {
		s.t.Errorf("list %s: %v", res, err)
	}
	la, _ := meta.ListAccessor(list)
	la.SetResourceVersion(rv)
	info := s.codec(r)
	w.Header().Set("Content-Type", info.MediaType)
	if err := encoder(info, res).Encode(list, w); err != nil {
		s.t.Errorf("encode %s list: %v", res, err)
	}
}

func (s *apiServer) watch(w http.ResponseWriter, r *http.Request, res string, sel fields.Selector, initial bool) {
	wt := &watcher{sel: sel, events: make(chan watchEvent, 1024)}
	s.mu.Lock()
	if initial {
		for _, o := range s.objs[res] {
			if sel.Matches(fieldSet(o)) {
				wt.events <- watchEvent{watch.Added, o.DeepCopyObject()}
			}
		}
		// The end of the initial events: a bookmark carrying the list's
		// resource version and the annotation client-go waits for.
		bm := emptyObject(res)
		a, _ := meta.Accessor(bm)
		a.SetResourceVersion(strconv.Itoa(s.rv))
		a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		wt.events <- watchEvent{watch.Bookmark, bm}
	}
	s.watchers[res] = append(s.watchers[res], wt)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ws := s.watchers[res]
		for i := range ws {
			if ws[i] == wt {
				s.watchers[res] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
	}()

	// As the API server does: each object encoded in the negotiated
	// format, wrapped in a WatchEvent, framed for that format's stream.
	info := s.codec(r)
	objEnc := encoder(info, res)
	stream := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-wt.events:
			var obj bytes.Buffer
			if err := objEnc.Encode(ev.obj, &obj); err != nil {
				s.t.Errorf("encode %s event: %v", res, err)
				return
			}
			if err := stream.Encode(&metav1.WatchEvent{Type: string(ev.typ), Object: runtime.RawExtension{Raw: obj.Bytes()}}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}
