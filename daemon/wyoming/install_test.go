package wyoming

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// installingEngine is sentenceEngine with a voice "en_US-lessac-medium"
// listed as not installed until InstallVoice has run; fail, when set,
// is what InstallVoice returns instead.
type installingEngine struct {
	*fakeEngine
	mu        sync.Mutex
	installed bool
	installs  []string
	fail      error
}

var _ VoiceInstaller = (*installingEngine)(nil)

func newInstallingEngine(rec *recorder) *installingEngine {
	e := &installingEngine{fakeEngine: sentenceEngine(rec)}
	e.VoicesFunc = func() []VoiceInfo {
		e.mu.Lock()
		defer e.mu.Unlock()
		return append(slices.Clone(testVoices), VoiceInfo{Name: "en_US-lessac-medium", Languages: []string{"en_US"}, NotInstalled: !e.installed})
	}
	return e
}

func (e *installingEngine) setFail(err error) {
	e.mu.Lock()
	e.fail = err
	e.mu.Unlock()
}

func (e *installingEngine) installCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.installs)
}

func (e *installingEngine) InstallVoice(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.installs = append(e.installs, name)
	if e.fail != nil {
		return e.fail
	}
	e.installed = true
	return nil
}

// A voice listed as not installed says so in info, is installed before
// a request for it is spoken, and is not what a language alone picks
// while an installed voice speaks it; an install still on its way or
// failed is an error event of its own code.
func TestNotInstalledVoice(t *testing.T) {
	rec := new(recorder)
	eng := newInstallingEngine(rec)
	_, addr := newServer(t, Options{Engine: eng})
	info := describe(t, addr)
	var installed []bool
	for _, v := range info.TTS[0].Voices {
		installed = append(installed, v.Installed)
	}
	if !slices.Equal(installed, []bool{true, true, false}) {
		t.Errorf("installed %v, want the last voice not installed", installed)
	}

	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"language": "en-US"}})
	cl.audio(typeAudioStop)
	if got := rec.requests(); got[0].Voice != "en_US-amy-medium" || eng.installCount() != 0 {
		t.Errorf("language picked %q, installs %d: want the installed voice", got[0].Voice, eng.installCount())
	}

	eng.setFail(fmt.Errorf("%w: 3 of 15 MB", ErrVoiceDownloading))
	cl = dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"name": "en_US-lessac-medium"}})
	cl.wantError(CodeVoiceDownloading)
	eng.setFail(errors.New("checksum mismatch"))
	cl = dial(t, addr)
	cl.send(typeSynthesizeStart, map[string]any{"voice": map[string]string{"name": "en_US-lessac-medium"}})
	cl.wantError(CodeInstallFailed)
	if n := len(rec.requests()); n != 1 {
		t.Errorf("engine asked %d times, want once (before the installs)", n)
	}

	eng.setFail(nil)
	cl = dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"name": "en_US-lessac-medium"}})
	cl.audio(typeAudioStop)
	if got := rec.requests(); got[len(got)-1].Voice != "en_US-lessac-medium" || eng.installCount() != 3 {
		t.Errorf("spoken in %q after %d installs", got[len(got)-1].Voice, eng.installCount())
	}
	// Installed now: no install for the next request.
	cl = dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Again.", "voice": map[string]string{"name": "en_US-lessac-medium"}})
	cl.audio(typeAudioStop)
	if n := eng.installCount(); n != 3 {
		t.Errorf("%d installs, want none more", n)
	}
}
