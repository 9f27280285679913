// Package cli holds the stateproc commands as a library: NewRoot builds the
// cobra command tree, and Main runs it and turns errors into the documented
// exit codes. cmd/stateproc only calls Main, so tests run every command
// in-process.
//
// Exit codes:
//
//	0  ok
//	1  any other failure (I/O, internal)
//	2  usage: bad flags, unknown operator or state, a target that exists without --force
//	3  incompatible (check, migrate)
//	4  the input is not a readable savepoint: not a savepoint, corrupt, truncated, hostile, from a newer format version, or of a layout not read yet
//
// Commands open their input with package layouts and read it only through
// savepoint.Source; the library packages do the work (inspect, export,
// sizing, evolve, rescale, prunettl, operatoredit) and cli parses flags,
// maps errors to exit codes and renders tables and JSON.
package cli
