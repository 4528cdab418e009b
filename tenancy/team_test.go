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
