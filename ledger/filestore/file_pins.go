package filestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// insertPin keeps the first pin of a (pod UID, container, key): a pin is
// the value first observed while the container ran, so a later value for
// the same key, a tenant's edit or a replay, must not replace it.
const insertPin = `INSERT INTO annotation_pins (pod_uid, container, key, value, at_ns)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (pod_uid, container, key) DO NOTHING`

// SavePins stores annotation pins in one transaction, committed like
// Append's rows (WAL, synchronous=FULL): after a crash either every pin of
// the call is there or none. The first pin per (pod UID, container, key)
// wins; saving it again, or another value for the key, changes nothing, so
// a caller may retry a failed call as is. A pin that could never be stored
// or matched (no pod UID, container or key; a time out of range) is logged
// and skipped, not returned as an error: retrying it could never succeed
// and would hold back the valid pins saved with it. Errors are storage
// failures only.
func (s *FileStore) SavePins(ctx context.Context, pins []attribution.AnnotationPin) error {
	valid := pins[:0:0]
	for _, p := range pins {
		if err := validatePin(p); err != nil {
			s.log.Warn("annotation pin skipped", "err", err)
			continue
		}
		valid = append(valid, p)
	}
	if len(valid) == 0 {
		return nil
	}
	pins = valid
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot save annotation pins to %s: %w", s.path, err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, insertPin)
	if err != nil {
		return fmt.Errorf("cannot save annotation pins to %s: %w", s.path, err)
	}
	defer stmt.Close()
	for _, p := range pins {
		if _, err := stmt.ExecContext(ctx, p.PodUID, p.Container, p.Key, p.Value, p.At.UnixNano()); err != nil {
			return fmt.Errorf("cannot save annotation pin %s/%s %s to %s: %w", p.PodUID, p.Container, p.Key, s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot save annotation pins to %s: %w", s.path, err)
	}
	return nil
}

// Pins returns every stored annotation pin, ordered by pod UID, container
// and key, with times in UTC.
func (s *FileStore) Pins(ctx context.Context) ([]attribution.AnnotationPin, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT pod_uid, container, key, value, at_ns FROM annotation_pins ORDER BY pod_uid, container, key`)
	if err != nil {
		return nil, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []attribution.AnnotationPin
	for rows.Next() {
		var (
			p  attribution.AnnotationPin
			ns int64
		)
		if err := rows.Scan(&p.PodUID, &p.Container, &p.Key, &p.Value, &ns); err != nil {
			return nil, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
		}
		p.At = time.Unix(0, ns).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
	}
	return out, nil
}

// validatePin refuses pins that could never be matched or stored: the key
// fields identify the container, and the time must fit in int64
// nanoseconds.
func validatePin(p attribution.AnnotationPin) error {
	switch {
	case p.PodUID == "" || p.Container == "" || p.Key == "":
		return errors.New("annotation pin without pod UID, container or key")
	case p.At.IsZero() || p.At.Year() < 1678 || p.At.Year() > 2261:
		return fmt.Errorf("annotation pin %s/%s %s has time %v outside the storable range", p.PodUID, p.Container, p.Key, p.At)
	}
	return nil
}

// ForgetPins deletes the pins of every pod for which keep returns false, in
// one transaction, and returns how many pins went. Pod UIDs are never
// reused, so the pins of a pod that is gone can never be needed again;
// without this the table would grow with every pod the node ever ran.
func (s *FileStore) ForgetPins(ctx context.Context, keep func(podUID string) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("cannot forget annotation pins in %s: %w", s.path, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT pod_uid FROM annotation_pins`)
	if err != nil {
		return 0, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
	}
	var gone []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			rows.Close()
			return 0, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
		}
		if !keep(uid) {
			gone = append(gone, uid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("cannot read annotation pins from %s: %w", s.path, err)
	}
	if len(gone) == 0 {
		return 0, nil
	}
	n := 0
	for _, uid := range gone {
		res, err := tx.ExecContext(ctx, `DELETE FROM annotation_pins WHERE pod_uid = ?`, uid)
		if err != nil {
			return 0, fmt.Errorf("cannot forget annotation pins of pod %s in %s: %w", uid, s.path, err)
		}
		k, _ := res.RowsAffected() // modernc always reports it
		n += int(k)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("cannot forget annotation pins in %s: %w", s.path, err)
	}
	return n, nil
}
