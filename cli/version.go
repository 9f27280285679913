package cli

import (
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// addVersionFunc gives cobra's templates stateprocVersion. Reading the
// build information parses the list of every module in the binary, which
// no command but --version needs; cobra keeps its template functions in
// one map for the process, hence the Once.
var addVersionFunc = sync.OnceFunc(func() { cobra.AddTemplateFunc("stateprocVersion", version) })

// version describes the build from the module's build information: the
// module version ("(devel)" for a build from a work tree) and, when the
// build recorded them, the VCS revision, its time and whether the tree had
// changes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "stateproc (no build information)"
	}
	parts := []string{"stateproc " + bi.Main.Version}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		v := "revision " + rev
		if t := settings["vcs.time"]; t != "" {
			v += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			v += ", modified"
		}
		parts = append(parts, v)
	}
	return strings.Join(append(parts, bi.GoVersion), ", ")
}
