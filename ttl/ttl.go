package ttl

import (
	"fmt"
	"math"
	"time"
)

// UpdateType says which accesses restart an entry's clock.
type UpdateType uint8

const (
	// OnCreateAndWrite restarts the clock when the entry is created or written.
	OnCreateAndWrite UpdateType = 1
	// OnReadAndWrite also restarts it when the entry is read.
	OnReadAndWrite UpdateType = 2
)

func (u UpdateType) String() string {
	switch u {
	case OnCreateAndWrite:
		return "OnCreateAndWrite"
	case OnReadAndWrite:
		return "OnReadAndWrite"
	}
	return fmt.Sprintf("UpdateType(%d)", uint8(u))
}

// Visibility says whether a read may return an expired entry that has not
// been removed yet.
type Visibility uint8

const (
	// NeverReturnExpired treats an expired entry as absent.
	NeverReturnExpired Visibility = 1
	// ReturnExpiredIfNotCleanedUp returns an expired entry until it is removed.
	ReturnExpiredIfNotCleanedUp Visibility = 2
)

func (v Visibility) String() string {
	switch v {
	case NeverReturnExpired:
		return "NeverReturnExpired"
	case ReturnExpiredIfNotCleanedUp:
		return "ReturnExpiredIfNotCleanedUp"
	}
	return fmt.Sprintf("Visibility(%d)", uint8(v))
}

// Config is the TTL of one state descriptor. Unlike Flink, it is recorded in
// the savepoint, so offline tools know which entries are expired.
type Config struct {
	// TTL is the time to live; it is mandatory and at least a millisecond.
	TTL        time.Duration
	Update     UpdateType
	Visibility Visibility
	// CleanupFullSnapshot drops expired entries when a full snapshot is written.
	CleanupFullSnapshot bool
	// CleanupIncremental is the number of entries the heap backend checks on
	// each state access; 0 disables incremental cleanup.
	CleanupIncremental int
	// SweepBudget is the number of entries the Pebble backend's background
	// sweeper examines per step; 0 disables the sweeper.
	SweepBudget int
}

// New returns the default configuration for a TTL of d: OnCreateAndWrite,
// NeverReturnExpired, no cleanup beyond cleanup on read.
func New(d time.Duration) Config {
	return Config{TTL: d, Update: OnCreateAndWrite, Visibility: NeverReturnExpired}
}

// Millis returns the TTL in milliseconds.
func (c Config) Millis() int64 { return c.TTL.Milliseconds() }

// Validate reports a configuration that the engine cannot run.
func (c Config) Validate() error {
	switch {
	case c.TTL < time.Millisecond:
		return fmt.Errorf("ttl: TTL %v is below one millisecond", c.TTL)
	case c.Update != OnCreateAndWrite && c.Update != OnReadAndWrite:
		return fmt.Errorf("ttl: unknown update type %d", uint8(c.Update))
	case c.Visibility != NeverReturnExpired && c.Visibility != ReturnExpiredIfNotCleanedUp:
		return fmt.Errorf("ttl: unknown visibility %d", uint8(c.Visibility))
	case c.CleanupIncremental < 0:
		return fmt.Errorf("ttl: negative incremental cleanup size %d", c.CleanupIncremental)
	case c.SweepBudget < 0:
		return fmt.Errorf("ttl: negative sweep budget %d", c.SweepBudget)
	}
	return nil
}

// Expired reports whether an entry last modified at lastModified, with a TTL
// of ttlMillis, is expired at now. All times are milliseconds since the epoch.
// This is the only place the rule is written down.
func Expired(lastModified, ttlMillis, now int64) bool {
	return ExpiresAt(lastModified, ttlMillis) <= now
}

// ExpiresAt returns lastModified + ttlMillis, saturating at the largest and
// smallest representable times.
func ExpiresAt(lastModified, ttlMillis int64) int64 {
	if ttlMillis > 0 && lastModified > math.MaxInt64-ttlMillis {
		return math.MaxInt64
	}
	if ttlMillis < 0 && lastModified < math.MinInt64-ttlMillis {
		return math.MinInt64
	}
	return lastModified + ttlMillis
}

// LastExpired returns the latest last-modified time that is expired at now
// under a TTL of ttlMillis: by the rule of Expired, an entry is expired
// exactly when its last-modified time is at or before it. ok is false when
// no time is expired. A loop over many entries compares against it rather
// than calling Expired for each.
func LastExpired(ttlMillis, now int64) (last int64, ok bool) {
	if now == math.MaxInt64 {
		// Every expiry, saturated or not, is at or before the largest time.
		return math.MaxInt64, true
	}
	// Otherwise t + d <= now < MaxInt64 cannot have saturated upwards, so
	// the condition is t <= now - d, computed without wrapping.
	switch {
	case ttlMillis > 0 && now < math.MinInt64+ttlMillis:
		return 0, false
	case ttlMillis < 0 && now > math.MaxInt64+ttlMillis:
		return math.MaxInt64, true
	}
	return now - ttlMillis, true
}

// Expired reports whether an entry last modified at lastModified is expired
// at now under c.
func (c Config) Expired(lastModified, now int64) bool {
	return Expired(lastModified, c.Millis(), now)
}
