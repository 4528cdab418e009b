package quota

import "time"

// SetTicker makes r's Run tick on what f returns instead of a time.Ticker,
// so tests drive Run tick by tick without waiting.
func SetTicker(r *Recorder, f func(time.Duration) (<-chan time.Time, func())) { r.ticker = f }
