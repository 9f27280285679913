package detgen

// Share is how many of n records split s of splits holds: n dealt
// round-robin, so the first n%splits splits hold one more. It is the same
// dealing the engine applies to RunOptions.StopAfter. A generator whose
// split s holds exactly Share(total, s, splits) records can therefore be
// stopped after exactly `total` records with every split paused on its last
// record, not ended: the end of the input without the watermark jumping to
// the end of time, which is what a savepoint taken "at the end, without
// draining" needs.
func Share(n int64, s, splits int) int64 {
	per := n / int64(splits)
	if int64(s) < n%int64(splits) {
		per++
	}
	return per
}
