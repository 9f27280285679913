package rescale

// SetPieceLimit sets the bytes of items after which a group's spill record
// ends and a piece of it begins; the returned func restores the limit.
func SetPieceLimit(n int) (restore func()) {
	old := pieceLimit
	pieceLimit = n
	return func() { pieceLimit = old }
}

// SetDirectLimits sets the largest factors between two max parallelisms
// that the direct path takes, growing and merging (0: never); the returned
// func restores them.
func SetDirectLimits(growth, merge int) (restore func()) {
	g, m := directGrowth, directMerge
	directGrowth, directMerge = growth, merge
	return func() { directGrowth, directMerge = g, m }
}
