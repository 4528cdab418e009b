package main

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/gpuledger/gpuledger/collector/kubemeta"
)

func kubeClient(kubeconfig string) (rest.Interface, error) {
	if kubeconfig != "" {
		c, err := kubemeta.ClientFromKubeconfig(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("cannot load kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := kubemeta.InClusterClient()
	if err != nil {
		return nil, fmt.Errorf("cannot load in-cluster config (set --kubeconfig outside a pod): %w", err)
	}
	return c, nil
}
