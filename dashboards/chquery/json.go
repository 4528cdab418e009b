package chquery

import (
	"encoding/json"
	"fmt"
)

func unmarshal(raw []byte, q *Dataquery) error {
	if err := json.Unmarshal(raw, q); err != nil {
		return fmt.Errorf("cannot read ClickHouse query: %w", err)
	}
	return nil
}
