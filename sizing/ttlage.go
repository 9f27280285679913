package sizing

import (
	"github.com/stateproc/stateproc/ttl"
)

// AgeHistogram counts the entries of a TTL state by age at a time now:
// four quarters of the TTL while alive, then past the TTL (expired by
// ttl.Expired, the one rule) up to twice the TTL and beyond. Entries past
// their TTL that are still stored are a leak when nothing reads them: the
// default cleanup happens on read only.
type AgeHistogram struct {
	TTLMillis int64 `json:"ttl_ms"`
	// Buckets are, in order: [0, ¼), [¼, ½), [½, ¾), [¾, 1) of the TTL,
	// then [1, 2) and [2, ∞) of it: the last two are expired.
	Buckets [6]float64 `json:"buckets"`
	// Future counts entries modified after now, which happens when now is
	// earlier than the savepoint.
	Future float64 `json:"future"`
	// Expired is Buckets[4] + Buckets[5]; ExpiredBytes their serialized
	// bytes, at the state's average per entry.
	Expired      float64 `json:"expired"`
	ExpiredBytes float64 `json:"expired_bytes"`
	// Cleanup lists the strategies the TTL configures besides cleanup on
	// read.
	Cleanup []string `json:"cleanup,omitempty"`
}

func newAgeHistogram(c *ttl.Config) *AgeHistogram {
	h := &AgeHistogram{TTLMillis: c.Millis()}
	if c.CleanupFullSnapshot {
		h.Cleanup = append(h.Cleanup, "full snapshots")
	}
	if c.CleanupIncremental > 0 {
		h.Cleanup = append(h.Cleanup, "incremental on the heap")
	}
	if c.SweepBudget > 0 {
		h.Cleanup = append(h.Cleanup, "the sweeper on Pebble")
	}
	return h
}

// add counts one entry last modified at t.
func (h *AgeHistogram) add(t, now int64) {
	if ttl.Expired(t, h.TTLMillis, now) {
		h.Expired++
		if age(t, now) < 2*float64(h.TTLMillis) {
			h.Buckets[4]++
		} else {
			h.Buckets[5]++
		}
		return
	}
	a := age(t, now)
	if a < 0 {
		h.Future++
		return
	}
	// Not expired means t + TTL > now: the age is below the TTL.
	h.Buckets[min(3, int(4*a/float64(h.TTLMillis)))]++
}

// age is now - t in milliseconds, as a float so that it cannot overflow.
func age(t, now int64) float64 { return float64(now) - float64(t) }

// scale multiplies the counts, for a histogram taken from a sample.
func (h *AgeHistogram) scale(f float64) {
	for i := range h.Buckets {
		h.Buckets[i] *= f
	}
	h.Future *= f
	h.Expired *= f
}
