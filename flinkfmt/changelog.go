package flinkfmt

// The changelog state backend's handles (tags 8 to 10, 13, 14) hold a
// materialized part, handles of the delegate backend's own layouts, and the
// changes logged since, as StateChange records per key group
// (AbstractStateChangeLogger): an operation byte, the state's short id,
// the key and namespace, and the operation's data; a METADATA record in
// key group -1 introduces each state. They are refused because, without
// the job, they cannot be applied faithfully:
//   - the key is written with the job's key serializer, which no change
//     records: only a materialized part's keyed-state header has it, and
//     the checkpoints taken before the first materialization (all the
//     reference fixtures) have none;
//   - the operation codes are not versioned and changed between releases
//     (Flink 1.16 to 1.19 write METADATA as 8; later releases, which added
//     REMOVE_FIRST_ELEMENT before it, as 9);
//   - ADD on reducing and aggregating state and MERGE_NS of merging windows
//     apply the job's functions.

// changelogRefusal says what a changelog handle holds and why it is not
// read.
func changelogRefusal(h *KeyedHandle) error {
	changes := 0
	for _, c := range h.NonMaterialized {
		changes += len(c.Increments)
	}
	return unsupportedf("changelog layout (%s, %d bytes: %d materialized handles, %d change records or files): its changes write keys with the job's key serializer, which the changelog does not record, and use operation codes that differ between Flink releases; restore it in Flink and take a savepoint",
		h.Kind, h.Size(), len(h.Materialized), changes)
}
