// Package rewrite holds the rules that every command writing a savepoint
// follows (rescale, prune-ttl, operator remove and rename, and later
// migrate), so that each command states only what it changes:
//
//   - The input is opened read-only and never modified; a target that is the
//     input, lies inside it or contains it is refused.
//   - Everything that can be checked is checked before anything is written:
//     the request (ErrRefused), the target (storage.ErrExists unless forced)
//     and the free space beside it.
//   - Output goes to a staging directory beside the target, is synced and
//     renamed into place (storage.Stage), so a killed run leaves at the
//     target either nothing or a complete savepoint.
//   - Temporary directories, staging and spill alike, are named
//     storage.TempPrefix + target name + "-" + digits. One rewrite at a time
//     may write a given target: it holds a lock file beside the target
//     (TempPrefix + name + ".lock") for the whole run, and under that lock it
//     removes the temporary directories that killed runs for the same target
//     left behind. Such a directory is never a savepoint: the CLI refuses to
//     open one. A spill directory in a directory the user chose (rescale's
//     --spill-dir) is named TempPrefix + target name + "-" + the first 8 hex
//     digits of the SHA-256 of the target's absolute path + "-" + digits,
//     and the run removes the ones of killed runs into the same target
//     there too. The spill directories of a target in a bucket, which
//     takes no lock, are work directories (package workdir) in the
//     system's temporary directory, which the next run that makes one
//     there removes if their run was killed.
//   - A rewrite reads its input through the read seam (savepoint.Source),
//     so it rewrites any layout package layouts opens, and writes
//     stateproc's layout through this package (Output.CreateFile), the one
//     tool that knows it. A segment a rewrite does not change is copied as
//     opaque bytes when the input keeps it in a stateproc data file, each
//     block checked on the way as a reader checks it, so that a rewrite
//     never publishes what verify refuses (values are decoded only by the
//     rewrites that change them); a
//     segment it filters, or one the input keeps elsewhere (an incremental
//     checkpoint's databases), is streamed entry by entry into the same
//     place, so the layout (file names, segment order) stays that of the
//     input, or becomes the engine's. A segment filtered by last-modified
//     time alone, from an input that gives each record's items framed,
//     has its kept items copied as they are, a run at a time.
//   - The output's metadata records, in Lineage, which savepoint it came
//     from and what the rewrite did.
//
// A dry run performs the checks and the reading that a report needs, and
// writes nothing, not even a lock file.
//
// StageDir gives a command whose output is not a savepoint (export) the
// same staging, lock and cleanup of killed runs.
package rewrite
