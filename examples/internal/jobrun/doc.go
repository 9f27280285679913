// Package jobrun is the command-line plumbing the example commands share:
// the flags that map onto engine.RunOptions (backend, parallelism,
// savepoints, restore, checkpoints, stop position, drain), printing a job's
// manifest, running it with a summary on stderr and the documented exit
// codes, and a sink that discards its input for runs that only want state.
// A job over an input without end runs until SIGTERM or SIGINT stop it
// with a savepoint, whose directory goes to stdout.
package jobrun
