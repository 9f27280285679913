package bootstrap

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrBadData is wrapped by every error about the data a savepoint is made
// from: a bad row, a column that cannot hold its state's values, a file
// that does not read. The CLI maps it to the exit code of unreadable input.
var ErrBadData = errors.New("bootstrap: bad data")

// RowError is a row that cannot become an entry: a value that does not
// fit its serializer, or a key given twice.
type RowError struct {
	// Source is the file the row is in, or for entries from Go code the
	// state and the number of the call that added them ("uid/state#2").
	Source string
	// Row numbers the rows of the source from 1; in a JSON lines file, it
	// is the line number. 0 means the whole source (a column whose type
	// cannot hold the state's values).
	Row int64
	// Column names the column, and within it the place of the value that
	// is wrong: "value.versions[1].effective_from".
	Column string
	Err    error
}

func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Row > 0 {
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %s", e.Column)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *RowError) Unwrap() []error { return []error{ErrBadData, e.Err} }

// BadRows is the error of a bootstrap that met bad rows: the first
// Options.MaxBadRows of them, in the order of their sources, and how many
// more were found before the bootstrap stopped looking (it stops at the
// first beyond the limit).
type BadRows struct {
	Rows []*RowError
	More int
}

func (e *BadRows) Error() string {
	if len(e.Rows) == 1 && e.More == 0 {
		return e.Rows[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d bad rows", len(e.Rows)+e.More)
	if e.More > 0 {
		fmt.Fprintf(&b, " or more, the first %d", len(e.Rows))
	}
	b.WriteString(": ")
	for i, r := range e.Rows {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	return b.String()
}

func (e *BadRows) Unwrap() error { return ErrBadData }

// badRows collects the bad rows of a bootstrap, from every worker.
type badRows struct {
	mu    sync.Mutex
	limit int
	rows  []*RowError
	more  int
	// seen is len(rows) > 0, read without the lock: every row asks.
	seen atomic.Bool
}

// add records a bad row; it returns false once one is found beyond the
// limit, when looking further is no use.
func (b *badRows) add(e *RowError) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rows) < b.limit {
		b.rows = append(b.rows, e)
		b.seen.Store(true)
		return true
	}
	b.more++
	return false
}

func (b *badRows) any() bool { return b.seen.Load() }

// full reports whether more bad rows were found than are reported: a
// bootstrap then stops looking.
func (b *badRows) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.more > 0
}

func (b *badRows) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rows) == 0 {
		return nil
	}
	slices.SortStableFunc(b.rows, func(x, y *RowError) int {
		return cmp.Or(cmp.Compare(x.Source, y.Source), cmp.Compare(x.Row, y.Row))
	})
	return &BadRows{Rows: b.rows, More: b.more}
}

// fileError is a dataset file that does not read.
func fileError(source string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrBadData, source, err)
}
