package keygroup

import (
	"errors"
	"fmt"

	"github.com/twmb/murmur3"
)

// MaxParallelismLimit is the largest max parallelism a job may have. Key
// groups fit in an unsigned 16-bit integer.
const MaxParallelismLimit = 32768

// Hash names the function that maps key bytes to a 32-bit hash. The savepoint
// metadata records it per operator so that another function can be added later.
type Hash uint8

const (
	// Murmur3 is murmur3_32 with seed 0 over the serialized key.
	Murmur3 Hash = 1
	// FlinkHashCode is Apache Flink's: murmur3's finalizer over the key's
	// Java hashCode, as an absolute value. It hashes key values, not their
	// bytes, so Sum cannot compute it; the reader of Flink's layout finds
	// the key group of a key value (see serializers.KeyGrouper).
	FlinkHashCode Hash = 2
)

func (h Hash) String() string {
	switch h {
	case Murmur3:
		return "murmur3_32"
	case FlinkHashCode:
		return "Flink's murmur hash of Java's hashCode"
	default:
		return fmt.Sprintf("hash(%d)", uint8(h))
	}
}

// Sum returns the hash of key under h.
func (h Hash) Sum(key []byte) (uint32, error) {
	switch h {
	case Murmur3:
		return murmur3.Sum32(key), nil
	case FlinkHashCode:
		return 0, fmt.Errorf("keygroup: %v hashes key values, not key bytes", h)
	default:
		return 0, fmt.Errorf("keygroup: unknown key hash function %d", uint8(h))
	}
}

// Of returns the key group of the serialized key under the Murmur3 hash.
func Of(key []byte, maxParallelism int) int {
	return int(murmur3.Sum32(key) % uint32(maxParallelism))
}

// Subtask returns the index of the subtask that owns key group kg.
func Subtask(kg, parallelism, maxParallelism int) int {
	return kg * parallelism / maxParallelism
}

// Range is an inclusive range of key groups. An empty range has End < Start.
type Range struct {
	Start, End int
}

// All returns the range of every key group under maxParallelism.
func All(maxParallelism int) Range { return Range{0, maxParallelism - 1} }

// ForSubtask returns the key groups owned by subtask i of parallelism p.
func ForSubtask(i, parallelism, maxParallelism int) Range {
	p, m := parallelism, maxParallelism
	return Range{Start: (i*m + p - 1) / p, End: ((i+1)*m - 1) / p}
}

// Contains reports whether kg lies in r.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg <= r.End }

// Len returns the number of key groups in r.
func (r Range) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Intersect returns the key groups in both r and o.
func (r Range) Intersect(o Range) Range {
	return Range{Start: max(r.Start, o.Start), End: min(r.End, o.End)}
}

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// DefaultMaxParallelism rounds p + p/2 up to a power of two, clamped to
// [128, 32768].
func DefaultMaxParallelism(parallelism int) int {
	want := parallelism + parallelism/2
	m := 128
	for m < want && m < MaxParallelismLimit {
		m *= 2
	}
	return m
}

// ErrInvalid is wrapped by every error of Validate.
var ErrInvalid = errors.New("keygroup: invalid parallelism")

// Validate checks that 1 <= parallelism <= maxParallelism <= 32768.
func Validate(parallelism, maxParallelism int) error {
	switch {
	case maxParallelism < 1 || maxParallelism > MaxParallelismLimit:
		return fmt.Errorf("%w: max parallelism %d outside 1..%d", ErrInvalid, maxParallelism, MaxParallelismLimit)
	case parallelism < 1:
		return fmt.Errorf("%w: parallelism %d below 1", ErrInvalid, parallelism)
	case parallelism > maxParallelism:
		return fmt.Errorf("%w: parallelism %d above max parallelism %d", ErrInvalid, parallelism, maxParallelism)
	}
	return nil
}
