// Package audiotest helps tests hear what mynah played: it makes
// PortAudio "play" into a file, so a test can compare, byte for byte, what
// reached the device, on machines without a sound card (CI, containers).
//
// ALSA's `file` PCM plugin writes every frame it is given to a file and
// passes it on to its slave; with the `null` slave nothing is played and
// writes never block. Making that the default PCM in the ~/.asoundrc of a
// test HOME gives PortAudio's ALSA host API a "default" output device that
// records. ALSA reads HOME when PortAudio initializes, so HOME must be set
// before the first PortAudio call in the process: call CaptureALSA from
// TestMain, or pass CaptureEnv to a subprocess such as a mynah binary.
package audiotest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteCaptureConfig writes home/.asoundrc making the default PCM a
// raw recorder into rawPath. The file plugin truncates rawPath each time a
// stream opens the device, so after a stream is closed rawPath holds
// exactly what that stream played (int16 LE, interleaved, at the stream's
// rate).
func WriteCaptureConfig(home, rawPath string) error {
	if strings.ContainsAny(rawPath, "\"\\\n") {
		return fmt.Errorf("alsa capture path %q needs quoting", rawPath)
	}
	conf := fmt.Sprintf(`# written by mynah tests: the default device records to a file
pcm.!default {
	type file
	slave.pcm "null"
	file "%s"
	format "raw"
}
`, rawPath)
	return os.WriteFile(filepath.Join(home, ".asoundrc"), []byte(conf), 0o600)
}

// CaptureEnv returns os.Environ() adjusted so a child process's
// PortAudio records into rawPath: HOME points at a fresh home holding the
// config, and ALSA_CONFIG_PATH is dropped so the system config plus that
// ~/.asoundrc are what ALSA reads.
func CaptureEnv(home, rawPath string) ([]string, error) {
	if err := WriteCaptureConfig(home, rawPath); err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ALSA_CONFIG_PATH=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home), nil
}

// CaptureALSA points this process's ALSA default device at a file
// under a new temporary directory and returns that file's path and a
// cleanup func. Call it from TestMain before anything initializes
// PortAudio.
func CaptureALSA() (rawPath string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "mynah-alsa-")
	if err != nil {
		return "", nil, err
	}
	rawPath = filepath.Join(dir, "out.raw")
	if err := WriteCaptureConfig(dir, rawPath); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	// A go command a test starts (go build of a binary under test) finds
	// its build and module caches through HOME: pin them where they are
	// now, or every such build starts from nothing.
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(d, "go-build"))
		}
	}
	if os.Getenv("GOPATH") == "" {
		if h, err := os.UserHomeDir(); err == nil {
			os.Setenv("GOPATH", filepath.Join(h, "go"))
		}
	}
	// With cgo, os.Setenv also updates the C environment ALSA reads.
	os.Setenv("HOME", dir)
	os.Unsetenv("ALSA_CONFIG_PATH")
	return rawPath, func() { os.RemoveAll(dir) }, nil
}

// Main is a TestMain body for packages whose tests play through PortAudio:
// it points ALSA's default device at a capture file, stores the file's path
// in *rawPath, runs the tests and exits.
func Main(m *testing.M, rawPath *string) {
	raw, cleanup, err := CaptureALSA()
	if err != nil {
		fmt.Fprintln(os.Stderr, "set up ALSA capture:", err)
		os.Exit(2)
	}
	*rawPath = raw
	code := m.Run()
	cleanup()
	os.Exit(code)
}
