package storage

import "time"

// SetLeaseTiming shortens the timing of the lease of a removal of orphans
// for a test, and puts it back when the test ends.
func SetLeaseTiming(t interface{ Cleanup(func()) }, renewal, hold, term, poll time.Duration) {
	r, h, tm, p := leaseRenewal, leaseHold, leaseTerm, cleanupPoll
	leaseRenewal, leaseHold, leaseTerm, cleanupPoll = renewal, hold, term, poll
	t.Cleanup(func() { leaseRenewal, leaseHold, leaseTerm, cleanupPoll = r, h, tm, p })
}
