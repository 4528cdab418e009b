// Package kubequota reads the GPU quota a cluster promises its teams: it
// watches namespaces and ResourceQuotas, and, where the cluster serves
// them, Kueue ClusterQueues (with their LocalQueues and ResourceFlavors),
// Volcano Queues and NVIDIA KAI scheduler Queues, maps each object to
// quota.Entry values (mapping.go, pure) and keeps the current snapshot for
// `gpuledger serve` to record and export.
//
// Every source but ResourceQuotas is optional: a group the API server does
// not serve, or one RBAC forbids, is logged once and rechecked on an
// interval, so a scheduler installed later is picked up without a restart.
//
// Teams come only from admin-owned objects: a namespace's or a queue's
// team label, else its name. Tenants write pod labels and nothing here
// reads them.
//
// What each source gives (mapping.go has the details):
//
//   - ResourceQuota: one entry per namespace and GPU resource (Object is
//     the namespace). Every unscoped quota of a namespace binds, so the
//     namespace's quota is the smallest; scoped quotas (spec.scopes,
//     spec.scopeSelector) bind only some pods and are left out.
//   - Kueue ClusterQueue: nominalQuota per GPU resource, flavors that name
//     the same model (their ResourceFlavor's nvidia.com/gpu.product node
//     label) summed; the limit is nominal plus borrowingLimit when every
//     summed flavor states one. The team is the queue's label, else the
//     one team of the namespaces whose LocalQueues point at it (only
//     namespaces its namespaceSelector admits), else its name: a queue
//     shared by several teams has no single payer and should be labelled.
//   - Volcano Queue: the guarantee, else deserved; the limit is the
//     capability. Only leaf queues count (a parent's share is its
//     children's).
//   - KAI Queue: spec.resources.gpu.quota in GPUs (-1: none), the limit
//     (-1: none). Only leaf queues count.
//
// Every quantity is bounded by quota.MaxMilli; an object with a bad GPU
// quantity is left out whole and logged with its name.
//
// RBAC, read-only, cluster-wide:
//
//   - apiGroups: [""]
//     resources: ["namespaces", "resourcequotas"]
//     verbs: ["get", "list", "watch"]
//   - apiGroups: ["kueue.x-k8s.io"]
//     resources: ["clusterqueues", "localqueues", "resourceflavors"]
//     verbs: ["get", "list", "watch"]
//   - apiGroups: ["scheduling.volcano.sh", "scheduling.run.ai"]
//     resources: ["queues"]
//     verbs: ["get", "list", "watch"]
package kubequota
