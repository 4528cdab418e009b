package main

import (
	"context"
	"encoding/json"
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

// kubeSystemUID is the UID of the cluster's kube-system namespace: a
// cluster's identity that outlives its nodes and is the same from every
// node, for collect's --cluster-id.
func kubeSystemUID(ctx context.Context, kube rest.Interface) (string, error) {
	raw, err := kube.Get().AbsPath("/api/v1/namespaces/kube-system").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("cannot read the kube-system namespace: %w", err)
	}
	var ns struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &ns); err != nil {
		return "", fmt.Errorf("cannot read the kube-system namespace: %w", err)
	}
	if ns.Metadata.UID == "" {
		return "", fmt.Errorf("the kube-system namespace has no UID")
	}
	return ns.Metadata.UID, nil
}
