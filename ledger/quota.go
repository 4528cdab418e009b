package ledger

import (
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/quota"
)

// MaxQuotaChanges bounds the quota changes one AppendQuota call takes and
// one QuotaChanges call returns: a cluster's quotas change a few times a
// month, so a million is years of a large cluster, and a broken recorder
// or a wrong period fails with an error instead of filling memory.
const MaxQuotaChanges = 1_000_000

// ValidateQuotaChanges checks what a store's AppendQuota is given, with At
// required in [lo, hi] (the times the store can hold); errors name the
// change's index, key and the field at fault. Both ledger stores use it,
// so both refuse the same input.
func ValidateQuotaChanges(changes []quota.Change, lo, hi time.Time) error {
	if len(changes) > MaxQuotaChanges {
		return fmt.Errorf("%d quota changes in one call, more than the %d allowed", len(changes), MaxQuotaChanges)
	}
	type second struct {
		cluster string
		quota.Key
		at int64
	}
	seen := make(map[second]int, len(changes))
	for i := range changes {
		c := &changes[i]
		where := fmt.Sprintf("quota change %d (%s %q %q at %s)", i, c.Source, c.Object, c.Resource, c.At.UTC().Format(time.RFC3339))
		switch {
		case c.At.IsZero():
			return fmt.Errorf("%s: at is not set", where)
		case c.At.Before(lo) || c.At.After(hi):
			return fmt.Errorf("%s: at is outside %d-%d", where, lo.UTC().Year(), hi.UTC().Year())
		}
		if c.Deleted {
			switch {
			case !quota.ValidSource(c.Source):
				return fmt.Errorf("%s: unknown source %q", where, c.Source)
			case c.Object == "" || len(c.Object) > quota.MaxNameLen:
				return fmt.Errorf("%s: object name is empty or longer than %d", where, quota.MaxNameLen)
			case c.Resource == "" || len(c.Resource) > quota.MaxNameLen:
				return fmt.Errorf("%s: resource is empty or longer than %d", where, quota.MaxNameLen)
			case len(c.Team) > quota.MaxNameLen:
				return fmt.Errorf("%s: team is longer than %d", where, quota.MaxNameLen)
			case c.Milli < 0 || c.Milli > quota.MaxMilli || c.LimitMilli < 0 || c.LimitMilli > quota.MaxMilli:
				return fmt.Errorf("%s: milli or limit_milli is outside 0..%d", where, quota.MaxMilli)
			}
		} else if err := c.Entry.Validate(); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := CheckRowCluster(c.Cluster); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		k := second{ClusterOrDefault(c.Cluster), c.Key, c.At.Unix()}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%s: changes %d and %d set the same quota in the same second", where, j, i)
		}
		seen[k] = i
	}
	return nil
}
