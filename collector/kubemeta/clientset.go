package kubemeta

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// userAgent names the collector in API server audit logs.
const userAgent = "gpuledger-collector"

// InClusterClient returns a clientset using the pod's service account.
func InClusterClient() (kubernetes.Interface, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load in-cluster Kubernetes config: %w", err)
	}
	return newClient(cfg)
}

// ClientFromKubeconfig returns a clientset for the current context of the
// kubeconfig file at path.
func ClientFromKubeconfig(path string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("cannot load kubeconfig %s: %w", path, err)
	}
	return newClient(cfg)
}

func newClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
