package flinkfmt

import (
	"context"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb"
)

// NativePairs reads the pairs of one native RocksDB part as the database
// holds them, for a writer of the canonical layout: a RocksDB key is the
// canonical layout's composite key and its value the canonical value (list
// elements already joined by the merge), so a pair is copied, not parsed.
// The part's tables stay open from key group to key group (one open file
// each), and each holds its index block and one data block: memory is
// bounded by the number of tables, not their size.
type NativePairs struct {
	ctx  context.Context
	k    *Keyed
	sk   *subtaskKeyed
	inst *nativeInstance
}

// OpenNative opens part (an index into Parts), which must be in the native
// RocksDB layout. Close releases its files.
func (k *Keyed) OpenNative(ctx context.Context, part int) (*NativePairs, error) {
	if part < 0 || part >= len(k.subtasks) {
		return nil, fmt.Errorf("flinkfmt: operator %s has no keyed part %d", k.Operator.ID, part)
	}
	sk := k.subtasks[part]
	if sk.layout != LayoutRocksDBNative {
		return nil, fmt.Errorf("flinkfmt: operator %s part %d is in the %s layout, not native RocksDB", k.Operator.ID, part, sk.layout)
	}
	inst, err := k.r.openNative(ctx, sk)
	if err != nil {
		return nil, locateNative(sk.file, k.Operator.ID.String(), sk.handle.KeyGroups.Start, err)
	}
	return &NativePairs{ctx: ctx, k: k, sk: sk, inst: inst}, nil
}

// A context is checked this often, in pairs.
const nativeCtxEvery = 4096

// KeyGroup calls f with every live pair of key group kg, the part's states
// in the order of its keyed-stream header, each state's keys in byte
// order: the order in which Flink's full snapshot of RocksDB
// (RocksStatesPerKeyGroupMergeIterator) writes them. state indexes
// Keyed.States; key is the composite key without its key-group prefix.
// key and value are valid only during the call.
func (n *NativePairs) KeyGroup(kg int, f func(state int, key, value []byte) error) error {
	k, sk := n.k, n.sk
	op := k.Operator.ID.String()
	if !sk.handle.KeyGroups.Contains(kg) {
		return fmt.Errorf("flinkfmt: key group %d is not in the part's key groups %v", kg, sk.handle.KeyGroups)
	}
	prefix, err := rocksdb.KeyGroupPrefix(kg, k.Operator.MaxParallelism)
	if err != nil {
		return at(sk.file, op, kg, -1, corrupt(err))
	}
	seen := 0
	for sid, idx := range sk.ids {
		it := n.inst.iter(sid)
		if it == nil {
			continue
		}
		for ok := it.SeekPrefix(prefix); ok; ok = it.Next() {
			if seen++; seen%nativeCtxEvery == 0 {
				if err := n.ctx.Err(); err != nil {
					return err
				}
			}
			if err := f(idx, it.Key()[len(prefix):], it.Value()); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return locateNative(sk.file, op, kg, err)
		}
	}
	return nil
}

// Close closes the part's files.
func (n *NativePairs) Close() error {
	if n.inst != nil {
		n.inst.close()
		n.inst = nil
	}
	return nil
}
