package rewrite

import "sync"

// Meter counts the bytes of its input that a rewrite has processed and
// passes the count to Options.Progress. The workers of a rewrite share one
// and tell it of each segment or block they finish, never of an entry, so
// its lock costs nothing measurable; the callback is called under the lock,
// so calls never overlap and the counts it sees only grow. A nil *Meter
// ignores what it is told, which is what a rewrite without Progress uses.
type Meter struct {
	mu     sync.Mutex
	done   int64
	total  int64
	report func(done, total int64)
}

// NewMeter returns a Meter over total bytes that reports to report, or nil
// when there is nothing to report to or nothing to process.
func NewMeter(total int64, report func(done, total int64)) *Meter {
	if report == nil || total <= 0 {
		return nil
	}
	return &Meter{total: total, report: report}
}

// Add counts n more bytes processed.
func (m *Meter) Add(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done += n
	m.report(m.done, m.total)
}
