package audio

import (
	"fmt"
	"os"
	"testing"

	"github.com/mynah-tts/mynah/audio/audiotest"
)

// alsaCapture is where this test process's ALSA default device writes:
// the bytes PortAudio played (see package audiotest).
var alsaCapture string

func TestMain(m *testing.M) {
	raw, cleanup, err := audiotest.CaptureALSA()
	if err != nil {
		fmt.Fprintln(os.Stderr, "set up ALSA capture:", err)
		os.Exit(2)
	}
	alsaCapture = raw
	code := m.Run()
	cleanup()
	os.Exit(code)
}
