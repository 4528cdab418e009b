package kubemeta

import (
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// userAgent names the collector in API server audit logs.
const userAgent = "gpuledger-collector"

// The clients speak core/v1 and resource.k8s.io/v1 only. client-go's
// generated clientset and informer factory register every API group of
// Kubernetes with their scheme when the package loads; in a DaemonSet that
// reads three core resources and ResourceSlices that costs ~350 linked
// packages, 50 MB of binary and ~16 MiB of resident memory on every GPU
// node (measured, BENCHMARKS.md). REST clients over a scheme holding these
// two group versions alone do the same list and watch.
var apiCodecs = sync.OnceValues(func() (serializer.CodecFactory, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return serializer.CodecFactory{}, fmt.Errorf("cannot register core/v1 types: %w", err)
	}
	if err := resourcev1.AddToScheme(s); err != nil {
		return serializer.CodecFactory{}, fmt.Errorf("cannot register resource.k8s.io/v1 types: %w", err)
	}
	return serializer.NewCodecFactory(s), nil
})

// InClusterClient returns a core/v1 client using the pod's service account.
func InClusterClient() (rest.Interface, error) {
	cfg, err := RESTConfig("")
	if err != nil {
		return nil, err
	}
	return NewClient(cfg)
}

// ClientFromKubeconfig returns a core/v1 client for the current context of
// the kubeconfig file at path.
func ClientFromKubeconfig(path string) (rest.Interface, error) {
	if path == "" {
		return nil, errors.New("cannot load kubeconfig: path is empty")
	}
	cfg, err := RESTConfig(path)
	if err != nil {
		return nil, err
	}
	return NewClient(cfg)
}

// ResourceClient returns a resource.k8s.io/v1 client for the kubeconfig
// file at path, or for the pod's service account when path is empty.
func ResourceClient(path string) (rest.Interface, error) {
	cfg, err := RESTConfig(path)
	if err != nil {
		return nil, err
	}
	return NewResourceClient(cfg)
}

// RESTConfig loads the kubeconfig file at path, or the pod's service
// account when path is empty.
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("cannot load in-cluster Kubernetes config: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("cannot load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// NewClient returns a client for the core/v1 API at cfg's server. It asks
// for protobuf, which the API server encodes and we decode at a fraction of
// JSON's cost, and accepts JSON from servers that do not offer it.
func NewClient(cfg *rest.Config) (rest.Interface, error) {
	return newGroupClient(cfg, "/api", corev1.SchemeGroupVersion)
}

// NewResourceClient returns a client for the resource.k8s.io/v1 API (DRA
// ResourceSlices) at cfg's server, with NewClient's wire formats.
func NewResourceClient(cfg *rest.Config) (rest.Interface, error) {
	return newGroupClient(cfg, "/apis", resourcev1.SchemeGroupVersion)
}

func newGroupClient(cfg *rest.Config, apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
	codecs, err := apiCodecs()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	cfg.APIPath = apiPath
	cfg.GroupVersion = &gv
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
