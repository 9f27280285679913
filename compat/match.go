package compat

import "github.com/stateproc/stateproc/serializers"

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

// match pairs saved and declared items of one kind by name: each saved item
// is decided by check, or unclaimed; each declared item the savepoint lacks
// is new.
func match(uid string, what What, opts Options, saved, declared []string, check func(i, j int) serializers.Compatibility) []Finding {
	index := make(map[string]int, len(declared))
	for j, n := range declared {
		index[n] = j
	}
	var fs []Finding
	found := make([]bool, len(declared))
	for i, n := range saved {
		f := Finding{Operator: uid, What: what, Name: n, Saved: i, Declared: -1}
		j, ok := index[n]
		if !ok {
			fs = append(fs, unclaimed(f, opts))
			continue
		}
		found[j] = true
		f.Declared = j
		c := check(i, j)
		f.Verdict, f.Reason, f.DataDependent = verdictOf(c.Verdict), c.Reason, c.DataDependent
		fs = append(fs, f)
	}
	for j, n := range declared {
		if !found[j] {
			fs = append(fs, Finding{Operator: uid, What: what, Name: n, Verdict: New, Saved: -1, Declared: j})
		}
	}
	return fs
}

func verdictOf(v serializers.Verdict) Verdict {
	switch v {
	case serializers.CompatibleAsIs:
		return AsIs
	case serializers.CompatibleAfterMigration:
		return AfterMigration
	}
	return Incompatible
}

func unclaimed(f Finding, opts Options) Finding {
	f.Unclaimed = true
	if opts.AllowNonRestoredState {
		f.Verdict, f.Reason = Dropped, "no longer in the job; not restored"
		return f
	}
	f.Verdict, f.Reason = Incompatible, "no longer in the job (allow non-restored state to drop it)"
	return f
}
