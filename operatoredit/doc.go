// Package operatoredit implements `stateproc operator remove` and `stateproc
// operator rename`: rewrites that change which operators a savepoint holds,
// or the uid a job finds one under, and copy every segment they keep as
// opaque bytes in the input's layout. Removing an operator is how state
// that no operator of a new job claims is dropped on purpose, instead of
// restoring with allow-non-restored-state; renaming is how state follows
// an operator whose uid changed.
package operatoredit
