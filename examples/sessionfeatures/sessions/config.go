package sessions

import (
	"fmt"
	"time"
)

// Config is a SessionFeatures job and its input.
type Config struct {
	// Seed and Users determine the input; Users 0 means an input without
	// end.
	Seed  int64
	Users int64
	// Parallelism of every operator.
	Parallelism int
	// MaxParallelism of the keyed operator; 0 leaves it to the engine, or
	// to the savepoint the job is restored from.
	MaxParallelism int
}

// MinUsers is the smallest input: one user per split.
const MinUsers = Splits

// Check reports a configuration the job cannot run.
func (c Config) Check() error {
	switch {
	case c.Users != 0 && c.Users < MinUsers:
		return fmt.Errorf("sessions: %d users: at least %d are needed", c.Users, MinUsers)
	case c.Parallelism < 1:
		return fmt.Errorf("sessions: parallelism %d", c.Parallelism)
	case c.MaxParallelism != 0 && c.MaxParallelism < c.Parallelism:
		return fmt.Errorf("sessions: max parallelism %d below parallelism %d", c.MaxParallelism, c.Parallelism)
	}
	return nil
}

const (
	// SessionGap is the inactivity that closes a session.
	SessionGap = 30 * time.Minute
	// CountsTTL is how long a category's count lives after its last click.
	CountsTTL = 7 * 24 * time.Hour
)
