// Package jobruntest is what the example jobs' tests share: running a
// job's command in a child process and stopping it with SIGTERM, as
// flink stop does, to get the savepoint it prints.
package jobruntest
