package pebblebackend

import (
	"context"
	"fmt"
)

// CompactedSize flushes the memtable, compacts every key down to the last
// level and returns the bytes and the number of the sstables that then
// hold the state: its size on disk once compaction has caught up.
// `stateproc size` loads a sample of a savepoint and measures it this way.
func (b *Backend) CompactedSize(ctx context.Context) (bytes, files int64, err error) {
	if err := b.check(); err != nil {
		return 0, 0, err
	}
	if err := b.commitWrites(); err != nil {
		return 0, 0, fmt.Errorf("pebblebackend: commit: %w", err)
	}
	if err := b.db.Flush(); err != nil {
		return 0, 0, fmt.Errorf("pebblebackend: flush: %w", err)
	}
	// Every key starts with its key group as a u16 below 32768, so [00] to
	// [ff] spans the whole database.
	if err := b.db.Compact(ctx, []byte{0x00}, []byte{0xff}, true); err != nil {
		return 0, 0, fmt.Errorf("pebblebackend: compact: %w", err)
	}
	t := b.db.Metrics().Total()
	return t.TablesSize, t.TablesCount, nil
}
