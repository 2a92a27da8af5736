package engine

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// TestKeeperSaysWhetherIdle: releases during a long synthesis say the
// engine is busy (voices keep their arenas), the one after it says idle.
func TestKeeperSaysWhetherIdle(t *testing.T) {
	var mu sync.Mutex
	var calls []bool
	k := startMemoryKeeper(func(idle bool) {
		mu.Lock()
		calls = append(calls, idle)
		mu.Unlock()
	}, 100*time.Millisecond, 300*time.Millisecond)
	defer k.close()
	end := k.begin()
	time.Sleep(1200 * time.Millisecond) // memoryTick 250 ms: at least two busy releases
	end()
	deadline := time.Now().Add(3 * time.Second)
	for {
		mu.Lock()
		got := append([]bool(nil), calls...)
		mu.Unlock()
		if len(got) > 0 && got[len(got)-1] {
			for _, idle := range got[:len(got)-1] {
				if idle {
					t.Fatalf("releases %v: an idle one while synthesis ran", got)
				}
			}
			if len(got) < 2 {
				t.Fatalf("releases %v: none while synthesis ran", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("releases %v: no idle release after synthesis ended", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countingModel counts a voice's memory releases.
type countingModel struct {
	model
	n *atomic.Int64
}

func (m countingModel) releaseMemory() error {
	m.n.Add(1)
	return m.model.(memoryReleaser).releaseMemory()
}

// TestIdleEngineReleasesVoiceMemory: once the engine is idle, a Piper
// voice with ONNX Runtime's arena is asked to give its memory back
// (a real run on the real demo voice), before Options.ReleaseMemory.
func TestIdleEngineReleasesVoiceMemory(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "alto")
	rec := enginetest.NewRecorder()
	log := slog.New(rec)
	var voiceReleases atomic.Int64
	var order []string
	var mu sync.Mutex
	released := make(chan struct{}, 8)
	vs, err := Open(&Options{
		Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: "alto", Logger: log,
		Piper: &voice.PiperOptions{Logger: log, Session: &ort.SessionOptions{Provider: ort.ProviderCPU, CPUArena: true}},
		ReleaseMemory: func() {
			mu.Lock()
			order = append(order, "heap")
			mu.Unlock()
			released <- struct{}{}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	speak(t, vs, "alto")
	vs.sessions.Each(func(_ string, v *loadedVoice) {
		v.model = countingModel{v.model, &voiceReleases}
	})
	speak(t, vs, "alto")
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("no release within 5 s of idling")
	}
	if n := voiceReleases.Load(); n == 0 {
		t.Fatalf("the idle release did not ask the voice (%v)", order)
	}
	for _, r := range rec.All() {
		if strings.Contains(r.Msg, "not released") {
			t.Errorf("logged %q %v", r.Msg, r.Attrs)
		}
	}
}
