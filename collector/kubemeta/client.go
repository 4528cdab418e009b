package kubemeta

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// userAgent names the collector in API server audit logs.
const userAgent = "gpuledger-collector"

// The client speaks core/v1 only. client-go's generated clientset and
// informer factory register every API group of Kubernetes with their
// scheme when the package loads; in a DaemonSet that reads three core
// resources that costs ~350 linked packages, 50 MB of binary and ~16 MiB of
// resident memory on every GPU node (measured, BENCHMARKS.md). A REST
// client over a scheme holding core/v1 alone does the same list and watch.
var coreCodecs = sync.OnceValues(func() (serializer.CodecFactory, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return serializer.CodecFactory{}, fmt.Errorf("cannot register core/v1 types: %w", err)
	}
	return serializer.NewCodecFactory(s), nil
})

// InClusterClient returns a core/v1 client using the pod's service account.
func InClusterClient() (rest.Interface, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load in-cluster Kubernetes config: %w", err)
	}
	return NewClient(cfg)
}

// ClientFromKubeconfig returns a core/v1 client for the current context of
// the kubeconfig file at path.
func ClientFromKubeconfig(path string) (rest.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("cannot load kubeconfig %s: %w", path, err)
	}
	return NewClient(cfg)
}

// NewClient returns a client for the core/v1 API at cfg's server. It asks
// for protobuf, which the API server encodes and we decode at a fraction of
// JSON's cost, and accepts JSON from servers that do not offer it.
func NewClient(cfg *rest.Config) (rest.Interface, error) {
	codecs, err := coreCodecs()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
