package rescale

// SetPieceLimit sets the bytes of items after which a group's spill record
// ends and a piece of it begins; the returned func restores the limit.
func SetPieceLimit(n int) (restore func()) {
	old := pieceLimit
	pieceLimit = n
	return func() { pieceLimit = old }
}

// SetDirectLimit sets the largest factor between two max parallelisms that
// the direct path takes (0: never); the returned func restores it.
func SetDirectLimit(k int) (restore func()) {
	old := directLimit
	directLimit = k
	return func() { directLimit = old }
}
