//go:build !unix || solaris || aix

package rewrite

// targetLock is a no-op where flock is not available: concurrent rewrites
// into one target are then not detected, and the stale-directory cleanup
// relies on the user not running two at once.
type targetLock struct{}

func lockTarget(string) (*targetLock, error) { return &targetLock{}, nil }

func (*targetLock) release() error { return nil }
