//go:build cgo && linux

package memory

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv set to 1 makes the test binary print what Tuning and
// SessionBuilding say and exit: the tuning is made as the binary loads,
// so each environment needs a process of its own.
const childEnv = "MYNAH_MEMORY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		arenas, threshold, ok := Tuning()
		fmt.Printf("%d %d %t %t\n", arenas, threshold, ok, SessionBuilding() != nil)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTuningAsLoaded: the binary limits glibc's arenas and fixes its mmap
// threshold as it loads, unless the environment has its own settings;
// sessions are built under a raised threshold only where the binary set
// it.
func TestTuningAsLoaded(t *testing.T) {
	cases := []struct {
		env  string
		want string // arena_max mmap_threshold tuned building
	}{
		{"", fmt.Sprintf("%d %d true true", ArenaMax, MMapThreshold)},
		{"MALLOC_ARENA_MAX=4", fmt.Sprintf("0 %d true true", MMapThreshold)},
		{"MALLOC_MMAP_THRESHOLD_=1048576", fmt.Sprintf("%d 0 true false", ArenaMax)},
		{"GLIBC_TUNABLES=glibc.malloc.arena_max=3", "0 0 false false"},
		{"MYNAH_MALLOC_TUNE=0", "0 0 false false"},
		{"MYNAH_MALLOC_TUNE=1", fmt.Sprintf("%d %d true true", ArenaMax, MMapThreshold)},
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		cmd := exec.Command(self)
		for _, kv := range os.Environ() {
			switch name, _, _ := strings.Cut(kv, "="); name {
			case "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES", "MYNAH_MALLOC_TUNE":
			default:
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, childEnv+"=1")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", c.env, err)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%q: arena_max mmap_threshold tuned building = %s, want %s", c.env, got, c.want)
		}
	}
}
