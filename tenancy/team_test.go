package tenancy

import "testing"

func TestResolveTeam(t *testing.T) {
	ns := map[string]string{"team": "search", "owner": "x"}
	tests := []struct {
		ns        map[string]string
		key, want string
	}{
		{ns, "", "search"},
		{ns, "team", "search"},
		{ns, "owner", "x"},
		{nil, "", "the-ns"},
		{map[string]string{"team": ""}, "", "the-ns"},
		{map[string]string{"team": "  "}, "", "the-ns"},
		{map[string]string{"Team": "ads"}, "", "the-ns"},
		{ns, "cost-center", "the-ns"},
	}
	for _, tt := range tests {
		if got := ResolveTeam(tt.ns, "the-ns", tt.key); got != tt.want {
			t.Errorf("ResolveTeam(%v, key %q) = %q, want %q", tt.ns, tt.key, got, tt.want)
		}
	}
}

// TestTeamResolver: the namespace's label wins; a pod's own label counts
// only where the namespace has none, and never to bill a team that a
// namespace owns (by label, or by name when unlabelled), compared trimmed
// and case-insensitively.
func TestTeamResolver(t *testing.T) {
	namespaces := map[string]map[string]string{
		"ml":      {"team": "research"},
		"scratch": {},
		"shared":  {"team": "  "},
	}
	r := NewTeamResolver(namespaces, "", true)
	for _, tt := range []struct {
		ns, podTeam string
		want        string
		refused     bool
	}{
		{"ml", "ads", "research", false},         // the namespace's label wins
		{"shared", "ads", "ads", false},          // blank namespace label: the pod's counts
		{"shared", "", "shared", false},          // neither: the namespace name
		{"shared", " Research ", "shared", true}, // owned by ml's label
		{"shared", "SCRATCH", "shared", true},    // owned by the unlabelled namespace's name
	} {
		team, refused := r.Resolve(namespaces[tt.ns], map[string]string{"team": tt.podTeam}, tt.ns)
		if team != tt.want || refused != tt.refused {
			t.Errorf("ns %s, pod team %q: %q refused %v, want %q refused %v", tt.ns, tt.podTeam, team, refused, tt.want, tt.refused)
		}
	}
	off := NewTeamResolver(namespaces, "team", false)
	if team, refused := off.Resolve(namespaces["shared"], map[string]string{"team": "ads"}, "shared"); team != "shared" || refused {
		t.Errorf("pod labels off: %q refused %v, want shared", team, refused)
	}
	// Reset forgets the namespaces of the last snapshot.
	r.Reset(map[string]map[string]string{"shared": {}})
	if team, refused := r.Resolve(nil, map[string]string{"team": "research"}, "shared"); team != "research" || refused {
		t.Errorf("after Reset: %q refused %v, want research", team, refused)
	}
}
