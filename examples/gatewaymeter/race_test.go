//go:build race

package main

// raceDetector is set in a build with the race detector, which runs the
// job many times slower.
const raceDetector = true
