package gateway

import (
	"fmt"
	"time"
)

// Config is a GatewayMeter job and its input.
type Config struct {
	// Seed and Events determine the input: Events is the number of events
	// the generator emits in all, 0 for an input without end.
	Seed   int64
	Events int64
	// Parallelism of every operator except the price source.
	Parallelism int
	// MaxParallelism of the keyed operators; 0 leaves it to the engine, or
	// to the savepoint the job is restored from.
	MaxParallelism int
	// Leak builds the variant without the abandonment timer and without TTL
	// cleanup, and makes its input end with a quiet hour (see Source).
	Leak bool
	// Window builds the variant whose TenantCost sums each tenant's cost
	// in one-minute event-time windows (CostWindow) instead of keeping a
	// running total.
	Window bool
}

// MinEvents is the smallest input: every split needs room for a request
// beside the quiet tail.
const MinEvents = 8 * Splits

// Check reports a configuration the job cannot run.
func (c Config) Check() error {
	switch {
	case c.Events == 0 && c.Leak:
		return fmt.Errorf("gateway: the leak variant's input ends with a quiet hour, so it needs a number of events")
	case c.Events != 0 && c.Events < MinEvents:
		return fmt.Errorf("gateway: %d events: at least %d are needed", c.Events, MinEvents)
	case c.Parallelism < 1:
		return fmt.Errorf("gateway: parallelism %d", c.Parallelism)
	case c.MaxParallelism != 0 && c.MaxParallelism < c.Parallelism:
		return fmt.Errorf("gateway: max parallelism %d below parallelism %d", c.MaxParallelism, c.Parallelism)
	}
	return nil
}

// The job's time constants.
const (
	// AbandonAfter is how long after its start a request without a
	// completion is billed as abandoned.
	AbandonAfter = 5 * time.Minute
	// OpenTTL is the processing-time backstop on `open`: hours, far above
	// AbandonAfter, so that a stalled watermark delays abandonment instead
	// of losing open requests to TTL.
	OpenTTL = time.Hour
)
