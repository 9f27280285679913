package storage

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"gocloud.dev/gcerrors"
)

// RetryPolicy bounds the retries of a request to a bucket: exponential
// backoff with jitter, a fixed number of attempts, and only for throttling
// (429, 503 SlowDown), other 5xx answers and broken connections. A 4xx
// answer other than 429 is final: it says the request itself is wrong.
type RetryPolicy struct {
	// Attempts is the number of tries of one request, the first included.
	Attempts int
	// BaseDelay is the wait before the first retry; each retry doubles it,
	// up to MaxDelay. The wait drawn lies between half the value and the
	// whole, so that clients that failed together do not retry together.
	BaseDelay, MaxDelay time.Duration
}

// DefaultRetryPolicy is what a bucket location gets unless its Options say
// otherwise.
var DefaultRetryPolicy = RetryPolicy{Attempts: 6, BaseDelay: 200 * time.Millisecond, MaxDelay: 10 * time.Second}

func (p RetryPolicy) orDefault() RetryPolicy {
	if p.Attempts <= 0 {
		return DefaultRetryPolicy
	}
	return p
}

// delay is the wait before retry number n (1 for the first).
func (p RetryPolicy) delay(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits before retry n, or returns the context's error.
func (p RetryPolicy) sleep(ctx context.Context, n int) error {
	t := time.NewTimer(p.delay(n))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retryable reports whether err is worth another attempt under the rules
// of RetryPolicy.
func Retryable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		c := status.HTTPStatusCode()
		return c == http.StatusTooManyRequests || c >= 500
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "SlowDown", "Throttling", "ThrottlingException", "TooManyRequests", "RequestLimitExceeded":
			return true
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.Internal:
		return true
	case gcerrors.NotFound, gcerrors.FailedPrecondition, gcerrors.PermissionDenied, gcerrors.InvalidArgument, gcerrors.AlreadyExists:
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return retry.RetryableConnectionError{}.IsErrorRetryable(err) == aws.TrueTernary
}

// awsRetryer is the SDK's standard retryer held to the policy: its
// attempts, its backoff and the errors it retries, without the client-side
// token bucket (which would stop retries after a burst of throttling, the
// very case they are for). It counts the retries it makes.
func (p RetryPolicy) awsRetryer(c *Counters) aws.Retryer {
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = p.Attempts
		o.MaxBackoff = p.MaxDelay
		o.RateLimiter = ratelimit.None
		o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			return aws.BoolTernary(Retryable(err))
		})}
		o.Backoff = retry.BackoffDelayerFunc(func(n int, _ error) (time.Duration, error) { return p.delay(n), nil })
	})
	return countingRetryer{std, c}
}

type countingRetryer struct {
	*retry.Standard
	c *Counters
}

func (r countingRetryer) RetryDelay(n int, err error) (time.Duration, error) {
	r.c.Retries.Add(1)
	return r.Standard.RetryDelay(n, err)
}

// FromStore reports whether err is a bucket store's refusal of a request
// (an HTTP status it answered with) or a request that never reached it (a
// network error): what the location's endpoint and the credentials
// decide, rather than what the savepoint holds.
func FromStore(err error) bool {
	var status interface{ HTTPStatusCode() int }
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &status) || errors.As(err, &op) || errors.As(err, &dns)
}
