// Package workdirtest plants the work directories that killed and live
// runs leave (see package workdir), for the tests of the commands that
// sweep them.
package workdirtest
