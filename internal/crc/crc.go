// Package crc is the one checksum of stateproc's files: CRC-32C
// (Castagnoli), over every block and metadata file of the savepoint format
// and every file an incremental checkpoint lists. One table serves them all.
package crc

import (
	"hash"
	"hash/crc32"
)

var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, table) }

// New returns a CRC-32C hash, for data that is read or written in pieces.
func New() hash.Hash32 { return crc32.New(table) }
