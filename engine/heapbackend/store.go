package heapbackend

import (
	"github.com/stateproc/stateproc/engine/state"
	"github.com/stateproc/stateproc/savepoint"
)

// store is what the backend needs from each kind of state store to
// snapshot, restore and close it.
type store interface {
	empty(gi int) bool
	// snapshot writes the records of group gi in the format's order.
	snapshot(w *entryWriter, gi int) error
	// restore inserts one savepoint entry, whose value is already decoded.
	restore(gi int, e *savepoint.Entry, c state.Cell) error
	drop()
}
