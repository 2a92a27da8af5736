// Package version says which mynah a binary is, for `mynahd -version`,
// `mynah version`, Home Assistant's device page (sw) and Wyoming's info.
package version

import (
	"runtime/debug"
	"sync"
)

// stamped is set by the build: make build passes
// -ldflags "-X github.com/mynah-tts/mynah/cmd/internal/version.stamped=$(git describe --tags --always --dirty)".
var stamped string

// String is the stamped version, else the commit the Go toolchain recorded
// (its first 12 hex digits, "-dirty" with uncommitted changes: what a plain
// go build in the repository records), else "dev". It is worked out
// once: Wyoming's voice list carries it on every request, and reading
// the build info costs a hundred allocations.
func String() string { return computed() }

var computed = sync.OnceValue(func() string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(info)
})

func fromBuildInfo(info *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v // go install module@version
		}
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
