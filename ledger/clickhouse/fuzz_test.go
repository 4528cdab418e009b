package clickhouse

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// FuzzConnOptions feeds arbitrary DSNs through the option parser: it must
// return an error or a usable address, never panic, and never drop TLS that
// the DSN asked for.
func FuzzConnOptions(f *testing.F) {
	for _, s := range []string{
		"clickhouse://u:p@host:9000/db",
		"clickhouse://u:p@host/db?secure=true&skip_verify=true",
		"clickhouse://host/db?compress=none&dial_timeout=3s",
		"clickhouse://host/db?compress=LZ4&secrue=1",
		"clickhouse://[::1]:9440/db?secure=1&dial_timeout=-1s",
		"clickhouse://h/db?skip_verify=yes",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ledger.ParseDSN(s)
		if err != nil || d.Scheme != ledger.SchemeClickHouse {
			return
		}
		co, err := parseConnOptions(d, Options{DialTimeout: time.Second})
		if err != nil {
			// The password may legitimately appear when it is also an
			// option name or value, or part of the known-options list.
			_, query, _ := strings.Cut(s, "?")
			known := strings.Join(sortedKeys(knownOptions), ", ")
			if len(d.Password) >= 4 && strings.Contains(err.Error(), d.Password) &&
				!strings.Contains(query, d.Password) && !strings.Contains(known, d.Password) {
				t.Fatalf("error leaks the password: %v", err)
			}
			return
		}
		if !strings.HasSuffix(co.addr, ":"+strconv.Itoa(d.Port)) {
			t.Fatalf("address %q lost port %d", co.addr, d.Port)
		}
		if d.Secure && co.tls == nil {
			t.Fatalf("secure DSN %q without TLS", s)
		}
		if co.dialTimeout <= 0 {
			t.Fatalf("dial timeout %v", co.dialTimeout)
		}
	})
}

var fuzzZones = []string{"UTC", "Asia/Kolkata", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham", "Europe/Dublin"}

// FuzzBuckets checks the bucket and segment planning of Aggregate for any
// range and zone: buckets tile [from, to) in order, each label is a
// calendar boundary at or before its range, and the segments of a bucket
// tile it with day/hour segments on whole UTC days/hours.
func FuzzBuckets(f *testing.F) {
	f.Add(int64(1709251200), int64(86400*3), uint8(1), uint8(1), int64(0))
	f.Add(int64(1710046800), int64(86400*5+123), uint8(2), uint8(2), int64(500))
	f.Add(int64(1712415600), int64(86400*40), uint8(3), uint8(3), int64(999999999))
	f.Fuzz(func(t *testing.T, from, dur int64, zone, size uint8, ns int64) {
		if from < 0 || from > 4e9 || dur <= 0 || dur > 60*86400 || ns < 0 || ns >= 1e9 {
			return
		}
		loc, err := time.LoadLocation(fuzzZones[int(zone)%len(fuzzZones)])
		if err != nil {
			t.Fatal(err)
		}
		sizes := []string{ledger.BucketNone, ledger.BucketHour, ledger.BucketDay, ledger.BucketMonth}
		sz := sizes[int(size)%len(sizes)]
		a := time.Unix(from, ns)
		b := a.Add(time.Duration(dur) * time.Second)
		buckets, err := planBuckets(a, b, loc, sz)
		if err != nil {
			t.Fatalf("planBuckets(%v, %v, %s, %q): %v", a, b, loc, sz, err)
		}
		cur := a
		for i, bk := range buckets {
			if !bk.From.Equal(cur) || !bk.From.Before(bk.To) {
				t.Fatalf("bucket %d [%v, %v) does not continue at %v", i, bk.From, bk.To, cur)
			}
			if sz != ledger.BucketNone && bk.Start.After(bk.From) {
				t.Fatalf("bucket %d label %v after its start %v", i, bk.Start, bk.From)
			}
			if sz != ledger.BucketNone && bk.Start.Location() != loc {
				t.Fatalf("bucket %d label not in %s", i, loc)
			}
			scur := bk.From
			for _, sg := range splitBucket(i, bk) {
				if !sg.from.Equal(scur) || !sg.from.Before(sg.to) || sg.bucket != i {
					t.Fatalf("segment %+v does not continue bucket %d at %v", sg, i, scur)
				}
				switch sg.level {
				case levelDay:
					if sg.from.Unix()%86400 != 0 || sg.to.Sub(sg.from) != 24*time.Hour {
						t.Fatalf("day segment %+v not a whole UTC day", sg)
					}
				case levelHour:
					if sg.from.Unix()%3600 != 0 || sg.to.Sub(sg.from) != time.Hour {
						t.Fatalf("hour segment %+v not a whole UTC hour", sg)
					}
				}
				scur = sg.to
			}
			if !scur.Equal(bk.To) {
				t.Fatalf("segments of bucket %d end at %v, not %v", i, scur, bk.To)
			}
			cur = bk.To
		}
		if !cur.Equal(b) {
			t.Fatalf("buckets end at %v, not %v", cur, b)
		}
	})
}
