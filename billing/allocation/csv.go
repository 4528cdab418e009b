package allocation

import (
	"encoding/csv"
	"fmt"
	"io"

	"github.com/gpuledger/gpuledger/ledger"
)

// WriteCSV writes the answer as one CSV table: a row per set and entry,
// the step's bounds, the grouping's fields, then the entry's numbers.
func WriteCSV(w io.Writer, a *Answer) error {
	cw := csv.NewWriter(w)
	head := []string{"start", "end"}
	head = append(head, a.Aggregate...)
	head = append(head, "held_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "efficiency", "idle_share_gpu_hours",
		"memory_mib_hours", "energy_kwh", "charge", "idle_share", "platform", "rounding", "total", "currency")
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("cannot write the CSV: %w", err)
	}
	for _, s := range a.Sets {
		for _, e := range s.Entries {
			row := []string{s.Start, s.End}
			for _, v := range e.Values {
				row = append(row, ledger.GuardCell(v))
			}
			eff := ""
			if e.Efficiency != nil {
				eff = e.Efficiency.String()
			}
			row = append(row, e.HeldHours.String(), e.UsedHours.String(), e.IdleHours.String(), eff, e.IdleShareHours.String(),
				e.MemoryMiBHours.String(), e.EnergyKWh.String(), e.Charge.String(), e.IdleShare.String(), e.Platform.String(),
				e.Rounding.String(), e.Total.String(), a.Currency)
			if err := cw.Write(row); err != nil {
				return fmt.Errorf("cannot write the CSV: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("cannot write the CSV: %w", err)
	}
	return nil
}
