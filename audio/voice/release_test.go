package voice_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// TestReleaseMemoryGivesTheArenaBack: with ONNX Runtime's arena, a
// Piper-medium-sized voice keeps what a long sentence needed (about
// 240 MB measured) until ReleaseMemory, after which it is back near
// where it was once loaded (3 MB above, measured). Its first run is the
// sentence itself: the arena's first region, which it never frees, is
// the run's first tensor, small in a Piper graph. The C allocator is set
// as mynahd sets it (a fixed 256 KiB mmap threshold, the heap trimmed
// after speech): with glibc's own dynamic threshold, raised by whatever
// the tests before freed, the freed regions stay in its heap (34 MB in
// make test's run), which is mynahd's memory policy's business, not the
// arena's.
func TestReleaseMemoryGivesTheArenaBack(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the 15 M-parameter voice")
	}
	p, err := voice.LoadPiper(enginetest.OpenRuntime(t), mediumVoice(t), &voice.PiperOptions{
		Session: &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1, CPUArena: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !ort.SetMMapThreshold(256 << 10) {
		t.Log("no mmap threshold to set; glibc's own decides")
	}
	settled := func() float64 {
		debug.FreeOSMemory()
		ort.TrimCHeap()
		return procStatusMB(t, "VmRSS")
	}
	loaded := settled()
	speak(t, p, still("Tomorrow will be sunny and warm, with a light breeze from the west in the afternoon, and the evening will stay mild."))
	spoken := procStatusMB(t, "VmRSS")
	if err := p.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	released := settled()
	t.Logf("VmRSS loaded %.1f MB, after the sentence %.1f MB, after ReleaseMemory %.1f MB", loaded, spoken, released)
	if emu := os.Getenv("MYNAH_EMULATED"); emu != "" {
		t.Skipf("the release works; what it keeps is not judged under %s, whose RSS is the emulator's", emu)
	}
	if spoken-loaded < 64 {
		t.Fatalf("the sentence took %.1f MB: this test no longer measures the arena", spoken-loaded)
	}
	if released-loaded > 32 {
		t.Errorf("after ReleaseMemory %.1f MB more than once loaded (%.1f MB after the sentence): the arena was not given back", released-loaded, spoken-loaded)
	}
}
