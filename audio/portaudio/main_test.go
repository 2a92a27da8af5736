package portaudio

import (
	"testing"

	"github.com/mynah-tts/mynah/audio/audiotest"
)

// alsaCapture is where this test process's ALSA default device writes:
// the bytes PortAudio played (see package audiotest).
var alsaCapture string

func TestMain(m *testing.M) { audiotest.Main(m, &alsaCapture) }
