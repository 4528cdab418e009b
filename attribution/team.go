package attribution

// DefaultTeamLabel is the label key that names a team when Config leaves
// TeamLabel empty.
const DefaultTeamLabel = "team"

// ResolveTeam says which team pays for a container of a pod in namespace.
// The namespace's label wins because cluster admins set it; the pod's label
// is used only where the namespace has none, because whoever deploys sets
// it and must not be able to move cost onto another team's bill. Without
// either the namespace name is the team. An empty key means
// DefaultTeamLabel.
func ResolveTeam(nsLabels, podLabels map[string]string, namespace, key string) string {
	if key == "" {
		key = DefaultTeamLabel
	}
	if t := nsLabels[key]; t != "" {
		return t
	}
	if t := podLabels[key]; t != "" {
		return t
	}
	return namespace
}
