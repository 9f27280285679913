// Command testdatagen writes the savepoints checked in under
// testdata/savepoints/v<N>/, N the current format version: small savepoints
// of the example jobs that the toolkit's tests read, covering both backends,
// parallelism 1 to 3, a max parallelism above 128, TTL state, pending
// timers, operator state, broadcast state, the leak, zstd blocks, and one
// tiny savepoint for byte-flipping tests.
//
// Run it from anywhere in the module, with go generate ./... or
//
//	go run ./internal/testdatagen
//
// It writes into a temporary directory beside the target and then replaces
// the target's savepoints, so a run that fails changes nothing, and two runs
// write the same bytes.
package main

//go:generate go run .
