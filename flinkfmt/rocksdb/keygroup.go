package rocksdb

import (
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
)

// Flink's largest max parallelism, 2^15 (KeyGroupRangeAssignment).
const maxFlinkParallelism = 1 << 15

// KeyGroupPrefixLen is the length of the key-group prefix of Flink's
// RocksDB keys: one byte when maxParallelism is at most 128, else two
// (CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix).
func KeyGroupPrefixLen(maxParallelism int) int {
	if maxParallelism > 128 {
		return 2
	}
	return 1
}

// KeyGroupPrefix is the big-endian key-group prefix with which every key of
// key group kg starts, so that Iter.SeekPrefix yields one key group.
func KeyGroupPrefix(kg, maxParallelism int) ([]byte, error) {
	if maxParallelism < 1 || maxParallelism > maxFlinkParallelism || kg < 0 || kg >= maxParallelism {
		return nil, fmt.Errorf("rocksdb: key group %d outside max parallelism %d", kg, maxParallelism)
	}
	if KeyGroupPrefixLen(maxParallelism) == 1 {
		return []byte{byte(kg)}, nil
	}
	return []byte{byte(kg >> 8), byte(kg)}, nil
}

// KeyGroupOf reads the key group from a key's prefix. A key too short or
// naming a key group past maxParallelism is corrupt.
func KeyGroupOf(key []byte, maxParallelism int) (int, error) {
	n := KeyGroupPrefixLen(maxParallelism)
	if len(key) < n {
		return 0, sst.Corruptf("key of %d bytes has no %d-byte key-group prefix", len(key), n)
	}
	kg := int(key[0])
	if n == 2 {
		kg = kg<<8 | int(key[1])
	}
	if kg >= maxParallelism {
		return 0, sst.Corruptf("key group %d in a key, max parallelism %d", kg, maxParallelism)
	}
	return kg, nil
}
