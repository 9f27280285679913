// Package diff compares two savepoints state by state: the library behind
// stateproc diff, which only parses flags and renders.
//
// Operators are matched by uid and states by name. Per keyed state it
// counts the keys only in A, only in B, present in both with some entry
// changed, and unchanged, and the same four counts of entries: a value
// state's entry is a (key, namespace), a map state's a (key, namespace, map
// key), a list state's an element, matched by its position in the list;
// an entry is changed when its stored value (the TTL timestamp included)
// differs. Timers are compared one by one as (key, namespace, time), so a
// timer is only in A, only in B, or in both. Operator list state is
// compared as the multiset of the elements of every subtask, which is what
// a restore at any parallelism sees; broadcast state by key.
//
// It compares by key, not by key group: when an operator's max parallelism
// differs, B's operator is first re-bucketed to A's key groups into a
// temporary directory (spilling to disk in bounded memory), by package
// rescale, or by flinkrewrite's Rescale, which hashes keys as Flink does,
// when B is a Flink savepoint, and then compared. Within a key group both sides stream in the order
// the read seam gives entries, sorted by (key, namespace, map key), so a
// key group is a merge of two sorted streams: memory holds one block of
// each side per worker and, when examples are asked for, a few entries per
// kind and state, whatever the size of the savepoints. A source whose
// segments come in another order (savepoint.Layout.Unsorted: Apache
// Flink's) has each segment read whole and sorted first, so that memory
// then holds one state's key group per side and worker. Key groups held by
// one side only are counted from the index without reading them.
//
// Max parallelism, parallelism, savepoint ids, lineage and file names are
// not differences; Report.Differ says whether keyed data, timers, operator
// or broadcast state differ.
//
// It reads only through the read seam (savepoint.Source) and sits in the
// tools layer beside inspect.
package diff
