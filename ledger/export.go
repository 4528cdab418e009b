package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// Export formats.
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// progressEvery is how many rows pass between progress calls.
const progressEvery = 10_000

// Export streams the rows of [from, to) from st to w as ledger.csv or as
// JSON lines with the same field names, holding one row at a time. progress,
// when set, is called every progressEvery rows and once at the end with the
// rows written so far. It returns the number of rows written.
func Export(ctx context.Context, st Store, from, to time.Time, format string, w io.Writer, progress func(done int64)) (int64, error) {
	enc, err := newRowEncoder(format, w)
	if err != nil {
		return 0, err
	}
	var n int64
	err = st.Rows(ctx, from, to, func(r attribution.Row) error {
		if err := enc.write(&r); err != nil {
			return err
		}
		n++
		if progress != nil && n%progressEvery == 0 {
			progress(n)
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("cannot export ledger rows: %w", err)
	}
	if err := enc.flush(); err != nil {
		return n, fmt.Errorf("cannot export ledger rows: %w", err)
	}
	if progress != nil {
		progress(n)
	}
	return n, nil
}

type rowEncoder interface {
	write(r *attribution.Row) error
	flush() error
}

func newRowEncoder(format string, w io.Writer) (rowEncoder, error) {
	switch format {
	case FormatCSV:
		cw, err := NewCSVWriter(w)
		if err != nil {
			return nil, err
		}
		return &csvEncoder{w: cw, one: make([]attribution.Row, 1)}, nil
	case FormatJSONL:
		bw := bufio.NewWriterSize(w, 64<<10)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		return &jsonlEncoder{bw: bw, enc: enc}, nil
	}
	return nil, fmt.Errorf("unknown export format %q (want %s or %s)", format, FormatCSV, FormatJSONL)
}

type csvEncoder struct {
	w   *CSVWriter
	one []attribution.Row
}

func (e *csvEncoder) write(r *attribution.Row) error {
	e.one[0] = *r
	return e.w.Write(e.one)
}

func (e *csvEncoder) flush() error { return e.w.Flush() }

// jsonRow is one JSONL line: the ledger.csv header names, times and numbers
// formatted as in the CSV (numbers stay JSON numbers), and the MIG profile
// where there is one.
type jsonRow struct {
	IntervalStart string      `json:"interval_start"`
	IntervalEnd   string      `json:"interval_end"`
	Node          string      `json:"node"`
	GPUUUID       string      `json:"gpu_uuid"`
	GPUModel      string      `json:"gpu_model"`
	SliceID       string      `json:"slice_id"`
	SharingMode   string      `json:"sharing_mode"`
	Kind          string      `json:"kind"`
	Namespace     string      `json:"namespace"`
	Pod           string      `json:"pod"`
	PodUID        string      `json:"pod_uid"`
	Container     string      `json:"container"`
	Team          string      `json:"team"`
	Allocated     json.Number `json:"allocated_gpu_seconds"`
	Used          json.Number `json:"used_gpu_seconds"`
	Memory        json.Number `json:"memory_mib_seconds"`
	Energy        json.Number `json:"energy_joules"`
	Method        string      `json:"method"`
	// MIGProfile is beyond ledger.csv: the profile of a MIG slice.
	MIGProfile string `json:"mig_profile,omitempty"`
	// Cluster is beyond ledger.csv: the row's cluster, absent for the
	// default cluster (a single-cluster install's rows read as before).
	Cluster string `json:"cluster,omitempty"`
}

type jsonlEncoder struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

func (e *jsonlEncoder) write(r *attribution.Row) error {
	err := e.enc.Encode(jsonRow{
		IntervalStart: FormatTime(r.IntervalStart), IntervalEnd: FormatTime(r.IntervalEnd),
		Node: r.Node, GPUUUID: r.GPUUUID, GPUModel: r.GPUModel, SliceID: r.SliceID,
		SharingMode: r.SharingMode, Kind: string(r.Kind), Namespace: r.Namespace, Pod: r.Pod,
		PodUID: r.PodUID, Container: r.Container, Team: r.Team,
		Allocated: json.Number(FormatFloat(r.AllocatedGPUSeconds)), Used: json.Number(FormatFloat(r.UsedGPUSeconds)),
		Memory: json.Number(FormatFloat(r.MemoryMiBSeconds)), Energy: json.Number(FormatFloat(r.EnergyJoules)),
		Method: r.Method, MIGProfile: r.MIGProfile, Cluster: nonDefaultCluster(r.Cluster),
	})
	if err != nil {
		return fmt.Errorf("cannot write ledger row as JSON: %w", err)
	}
	return nil
}

func (e *jsonlEncoder) flush() error {
	if err := e.bw.Flush(); err != nil {
		return fmt.Errorf("cannot flush ledger JSON lines: %w", err)
	}
	return nil
}

// nonDefaultCluster is cluster, or "" for the default cluster.
func nonDefaultCluster(cluster string) string {
	if cluster == DefaultClusterName {
		return ""
	}
	return cluster
}
