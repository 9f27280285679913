package rescale

// SetPieceLimit sets the bytes of items after which a group's spill record
// ends and a piece of it begins; the returned func restores the limit.
func SetPieceLimit(n int) (restore func()) {
	old := pieceLimit
	pieceLimit = n
	return func() { pieceLimit = old }
}
