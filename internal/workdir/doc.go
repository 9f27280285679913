// Package workdir makes the temporary work directories of the commands and
// the engine (spill files, scratch Pebble databases, databases fetched from
// a bucket, converted savepoints) so that what a run killed with SIGKILL
// leaves is removed by a later run, and what a live run uses is not.
//
// Create names a directory prefix + digits + ".work" and keeps a lock on
// the file LockName inside it (storage.LockFile, an flock that the kernel
// drops when the process dies, in a file that names its holder) until
// Remove. Before its first directory in a parent, a process sweeps that
// parent: one listing, in which the directories of the same prefix whose
// lock it can take belong to dead runs and are removed; those whose lock
// is held belong to live runs and are left alone. A directory is renamed
// to prefix + digits + ".gone" before it is removed, by its owner or by a
// sweep, so that one whose removal was cut short is still recognised and
// removed by the next sweep.
//
// Nothing but these names is touched: an entry whose name does not match
// the pattern exactly, or that is not a directory (a symbolic link is not
// followed), or whose lock file is not a regular file, is left alone.
// Between making a directory and locking its file, its creator holds no
// lock, and a run killed there leaves a directory that is empty or holds
// an empty lock file (the holder writes its name once it holds the lock).
// Such a directory is left alone while it is younger than a minute, so as
// not to disturb a live creator, and removed after that (an empty one with
// rmdir, which removes nothing else).
//
// Where flock is not available (some network file systems) a lock cannot
// tell a live run from a dead one, and a directory that holds its lock
// file is left alone; on platforms without flock, no ".work" directory is
// removed. Whatever a sweep cannot remove (another user's directory, a
// permission error) is left to a later sweep: a sweep never fails the
// creation of a directory.
package workdir
