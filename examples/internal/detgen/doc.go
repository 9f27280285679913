// Package detgen holds what the example jobs' generators share: a seeded hash
// that turns (seed, index, field) into a pseudo-random number, so that every
// generated record is a pure function of its index and a split can be opened
// anywhere; the size of each split, chosen to match how the engine deals a
// stop position over splits; and a small binary heap for merging per-split
// streams in event-time order.
package detgen
