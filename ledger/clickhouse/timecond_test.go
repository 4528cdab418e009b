package clickhouse

import "testing"

func TestDateTimeLiteral(t *testing.T) {
	for _, c := range []struct {
		sec  int64
		want string
	}{
		{1712415600, "toDateTime(1712415600, 'UTC')"},
		{-86400, "toDateTime(0, 'UTC')"},              // before 1970: 18.16 would wrap to 2106
		{4295030400, "toDateTime(4294967295, 'UTC')"}, // after 2106: 18.16 would wrap to 1970
	} {
		if got := dt(c.sec); got != c.want {
			t.Errorf("dt(%d) = %s, want %s", c.sec, got, c.want)
		}
	}
}
