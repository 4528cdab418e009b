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
