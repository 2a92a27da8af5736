package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		main     string
		settings map[string]string
		want     string
	}{
		{"(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "false"}, "0123456789ab"},
		{"(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "true"}, "0123456789ab-dirty"},
		{"(devel)", nil, "dev"},
		{"", nil, "dev"},
		{"v1.4.0", nil, "v1.4.0"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Version: c.main}}
		for k, v := range c.settings {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := fromBuildInfo(info); got != c.want {
			t.Errorf("%q %v: %q, want %q", c.main, c.settings, got, c.want)
		}
	}
}

// A binary built the way make build does reports that version; one built
// with VCS stamping (go build's default, unless GOFLAGS turns it off as on
// some build machines) reports the commit.
func TestBinaryVersion(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "mynah")
	build := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, append(append([]string{"build", "-o", bin}, args...), "../../mynah")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("mynah version: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := build("-ldflags", "-X github.com/mynah-tts/mynah/cmd/internal/version.stamped=v9.8.7-3-gabc"); got != "mynah v9.8.7-3-gabc" {
		t.Errorf("stamped build says %q", got)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD (the tests run in a clone): %v", err)
	}
	if got := build("-buildvcs=true"); !strings.HasPrefix(got, "mynah "+string(head[:12])) {
		t.Errorf("plain go build says %q, want the commit %s", got, head[:12])
	}
}
