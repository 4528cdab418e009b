package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpuledger/gpuledger/internal/kubetest"
)

// manifestDir holds the plain manifests (rendered from the chart), relative
// to this package's directory.
const manifestDir = "../../deploy"

// object is one Kubernetes object of a manifest file.
type object struct {
	file string
	*unstructured.Unstructured
}

func (o object) String() string {
	s := o.GetKind() + " " + o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		s = o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return s + " (" + filepath.Base(o.file) + ")"
}

// loadManifests reads every Kubernetes object in manifestDir's YAML files
// (not in sub-directories, which hold the chart itself). Documents without
// apiVersion and kind (a price book, say) are not objects and are left out.
func loadManifests() ([]object, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(manifestDir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	var objs []object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		o, err := decodeObjects(f, b)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("no Kubernetes objects in %s/*.yaml", manifestDir)
	}
	return objs, nil
}

// decodeObjects reads the objects of a multi-document YAML file.
func decodeObjects(file string, b []byte) ([]object, error) {
	var objs []object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if m == nil || m["apiVersion"] == nil || m["kind"] == nil {
			continue
		}
		if m["kind"] == "List" {
			return nil, fmt.Errorf("%s: a List; render plain objects", file)
		}
		objs = append(objs, object{file: file, Unstructured: &unstructured.Unstructured{Object: m}})
	}
}

// collectorAccount is the ServiceAccount the collector's DaemonSet runs as.
func collectorAccount(objs []object) (namespace, name string, err error) {
	var found []string
	for _, o := range objs {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		sa, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		namespace, name = o.GetNamespace(), sa
		found = append(found, o.String())
	}
	if len(found) != 1 {
		return "", "", fmt.Errorf("want exactly one DaemonSet in the manifests, found %v", found)
	}
	if namespace == "" {
		return "", "", fmt.Errorf("the DaemonSet has no namespace")
	}
	return namespace, name, nil
}

// baseline is a ServiceAccount nothing is bound to: what it may do, every
// ServiceAccount may.
var baseline = kubetest.ServiceAccount("gpuledger-test-baseline", "nobody")

// The one control plane the package's tests share: starting one costs
// a few seconds. Its static token file is written at start, so every
// ServiceAccount of the manifests gets its token up front.
var shared struct {
	once      sync.Once
	c         *kubetest.Cluster
	objs      []object
	collector kubetest.Identity
	err       error // from starting the control plane

	manifestErr error

	installOnce sync.Once
	installErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.Stop()
	}
	os.Exit(code)
}

// cluster returns the shared control plane, starting it on first use.
func cluster(t *testing.T) (*kubetest.Cluster, []object, kubetest.Identity) {
	t.Helper()
	shared.once.Do(func() {
		shared.objs, shared.manifestErr = loadManifests()
		if shared.manifestErr != nil {
			return
		}
		ns, name, err := collectorAccount(shared.objs)
		if err != nil {
			shared.manifestErr = err
			return
		}
		shared.collector = kubetest.ServiceAccount(ns, name)
		ids := []kubetest.Identity{shared.collector, baseline}
		for _, o := range shared.objs {
			if o.GetKind() == "ServiceAccount" && (o.GetNamespace() != ns || o.GetName() != name) {
				ids = append(ids, kubetest.ServiceAccount(o.GetNamespace(), o.GetName()))
			}
		}
		shared.c, shared.err = kubetest.Start(context.Background(), kubetest.Options{Identities: ids, Logf: t.Logf})
	})
	if shared.manifestErr != nil {
		t.Fatalf("manifests in %s: %v", manifestDir, shared.manifestErr)
	}
	kubetest.Require(t, shared.err)
	return shared.c, shared.objs, shared.collector
}

// install applies every manifest object the server serves, once per run,
// with a server-side dry run of each first. It returns the objects it left
// out because their API (a CRD such as monitoring.coreos.com's) is not
// installed.
func install(t *testing.T) (applied, unserved []object) {
	t.Helper()
	c, objs, _ := cluster(t)
	ctx := context.Background()
	served, err := servedAPIs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if served[o.GetAPIVersion()] {
			applied = append(applied, o)
		} else {
			unserved = append(unserved, o)
		}
	}
	shared.installOnce.Do(func() {
		// The schedulers' CRDs, so serve's rules on their queues name
		// resources the server has (can-i refuses unknown ones).
		if shared.installErr = installQuotaCRDs(ctx, c); shared.installErr != nil {
			return
		}
		if shared.installErr = apply(ctx, t, c, applied, false); shared.installErr == nil {
			waitForRBAC(ctx, c, shared.collector)
		}
	})
	if shared.installErr != nil {
		t.Fatal(shared.installErr)
	}
	return applied, unserved
}

// servedAPIs returns the group/versions the server serves ("v1", "apps/v1").
func servedAPIs(ctx context.Context, c *kubetest.Cluster) (map[string]bool, error) {
	out, err := c.Kubectl(ctx, nil, "api-versions")
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, gv := range strings.Fields(out) {
		served[gv] = true
	}
	return served, nil
}

// apply creates the namespaces the objects live in (unless the manifests
// define them), then dry-runs each object on the server, then (unless
// dryRunOnly) applies it.
func apply(ctx context.Context, t *testing.T, c *kubetest.Cluster, objs []object, dryRunOnly bool) error {
	defined := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			defined[o.GetName()] = true
		}
	}
	created := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || (defined[ns] && !dryRunOnly) || created[ns] {
			continue
		}
		if _, err := c.Kubectl(ctx, nil, "get", "namespace", ns); err != nil {
			if _, err := c.Kubectl(ctx, nil, "create", "namespace", ns); err != nil {
				return err
			}
		}
		created[ns] = true
	}
	// Namespaces first, as `helm install` orders them; then file order.
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b object) int {
		return boolRank(b.GetKind() == "Namespace") - boolRank(a.GetKind() == "Namespace")
	})
	for _, o := range ordered {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		if o.GetKind() != "Namespace" || dryRunOnly {
			// A namespaced object cannot be dry-run before its namespace
			// exists, so namespaces are only applied.
			if _, err := c.Kubectl(ctx, bytes.NewReader(b), "apply", "--server-side", "--dry-run=server", "-f", "-"); err != nil {
				return fmt.Errorf("server-side dry run of %s: %w", o, err)
			}
			if dryRunOnly {
				t.Logf("server-side dry run of %s: accepted", o)
				continue
			}
		}
		// Server-side apply: no last-applied annotation, whose 256 KiB
		// limit a dashboard ConfigMap could exceed.
		out, err := c.Kubectl(ctx, bytes.NewReader(b), "apply", "--server-side", "-f", "-")
		if err != nil {
			return fmt.Errorf("apply %s: %w", o, err)
		}
		t.Logf("applied %s: %s", o, strings.TrimSpace(out))
	}
	return nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitForRBAC waits (at most 10 s) until the API server's authorizer has
// caught up with the new bindings: until id may list what the collector
// reads. Tests then see the RBAC as applied. A manifest that does not grant
// it is reported by the tests, not here.
func waitForRBAC(ctx context.Context, c *kubetest.Cluster, id kubetest.Identity) {
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range collectorReads {
		for {
			out, _ := c.Kubectl(ctx, nil, "auth", "can-i", "list", r, "-A", "--as", id.User)
			if strings.TrimSpace(out) == "yes" || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// quotaCRDs are the upstream CRDs quota/kubequota's tests keep: Kueue's,
// Volcano's and KAI's queue objects, which serve watches.
const quotaCRDs = "../../quota/kubequota/testdata/crds"

// installQuotaCRDs creates them and waits until the server serves them.
func installQuotaCRDs(ctx context.Context, c *kubetest.Cluster) error {
	files, err := filepath.Glob(filepath.Join(quotaCRDs, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (%v)", quotaCRDs, err)
	}
	for _, f := range files {
		if _, err := c.Kubectl(ctx, nil, "create", "-f", f); err != nil {
			return err
		}
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		if _, err := c.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+plural+"."+group); err != nil {
			return err
		}
	}
	return nil
}
