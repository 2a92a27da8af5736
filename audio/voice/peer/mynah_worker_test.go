package peer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/peer"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Environment of the mynah worker.
const (
	voicesEnv = "MYNAH_PEER_VOICES" // the voices directory
	voiceEnv  = "MYNAH_PEER_VOICE"  // the voice to load from it
	// optimizedEnv is the optimized-model cache (mynahd's
	// onnx.optimized_dir), kept across the starts.
	optimizedEnv = "MYNAH_PEER_OPTIMIZED"
	// wantOptimizedEnv, set to 1, makes the worker fail unless its voice
	// loaded from the optimized copy: the start after the install's
	// prepare must find what the prepare built.
	wantOptimizedEnv = "MYNAH_PEER_WANT_OPTIMIZED"
	// modelEnv is the model file the prepare role builds the copy of.
	modelEnv = "MYNAH_PEER_MODEL"
)

// mynahWorker is the benchmark's mynah side: the voice opened the way
// mynahd opens it (engine.Open, then Preload loading the default voice
// through voice.LoadPiper and quant/ort) with onnx.provider cpu,
// onnx.threads 1 and mynahd's defaults otherwise: onnx.arena (the CPU
// arena, given back once the engine is idle), onnx.lift_conv1d (1-D convolutions
// lifted to 2-D, as voice.LoadPiper does by default) and
// onnx.optimized_dir with mynahd's background build (a start that finds
// no copy loads the model as its file has it and builds the copy in the
// background, engine.Options.OptimizeInBackground; one that finds it
// loads it), and each sentence spoken through engine.Speak with the
// phrase cache off. Like mynahd, the engine gives memory back while it
// speaks (ReleaseMemory), here the Go heap's free pages: malloc_trim
// needs cgo, which test files cannot have, and with mynahd's mmap
// threshold (mynahdMalloc) every tensor over 256 KiB is unmapped as it is
// freed anyway.
func mynahWorker() error {
	dir, name := os.Getenv(voicesEnv), os.Getenv(voiceEnv)
	fail := func(err error) error {
		peer.WriteLine(os.Stdout, peer.Ready{Error: err.Error()})
		return err
	}
	// As mynahd (sessionBuilding): the mmap threshold raised while a
	// session is built, where it is mynahd's.
	var building func(func())
	if os.Getenv("MALLOC_MMAP_THRESHOLD_") == "262144" {
		building = ort.LoadThreshold(262144, ort.MaxMMapThreshold)
	}
	rt, err := ort.Open(&ort.Options{Building: building})
	if err != nil {
		return fail(err)
	}
	defer rt.Close()
	base, err := selfRSS()
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	start := time.Now()
	eng, err := engine.Open(&engine.Options{
		Runtime: rt, Dir: dir, Default: name,
		Piper:                workerPiper(),
		OptimizeInBackground: true,
		ReleaseMemory:        debug.FreeOSMemory,
	})
	if err != nil {
		return fail(err)
	}
	defer eng.Close()
	info, err := eng.Preload(ctx)
	if err != nil {
		return fail(err)
	}
	load := time.Since(start)
	if os.Getenv(wantOptimizedEnv) == "1" && !info.Optimized {
		return fail(fmt.Errorf("%s loaded without its optimized copy in %s", name, os.Getenv(optimizedEnv)))
	}
	if err := peer.WriteLine(os.Stdout, peer.Ready{
		Ready: true, Runtime: "mynah (onnx runtime " + rt.Version() + mallocNote() + ")", LoadMS: ms(load),
		SampleRate: info.SampleRate, BaseRSSKB: base,
	}); err != nil {
		return err
	}
	return peer.Serve(os.Stdin, os.Stdout, func(text string) (int, error) {
		frames := 0
		err := eng.Speak(ctx, engine.Request{Text: text, NoCache: true}, func(c engine.Chunk) error {
			frames += c.PCM.Frames()
			return nil
		})
		return frames, err
	})
}

// workerPiper is how the mynah worker loads Piper voices, as mynahd does
// with onnx.provider cpu and onnx.threads 1.
func workerPiper() *voice.PiperOptions {
	return &voice.PiperOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1, CPUArena: true},
		OptimizedDir: os.Getenv(optimizedEnv)}
}

// prepareWorker does what `mynah voice install` does after the download
// (cmd/mynah prepareVoice): it opens ONNX Runtime and builds the voice's
// optimized copy for this CPU (voice.OptimizePiper) into the worker's
// optimized-model cache, then prints that whole time as one JSON line,
// {"prepare_ms": …}, and exits.
func prepareWorker() error {
	start := time.Now()
	rt, err := ort.Open(nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := voice.OptimizePiper(rt, os.Getenv(modelEnv), workerPiper()); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(preparedLine{PrepareMS: ms(time.Since(start))})
}

// preparedLine is the prepare role's output.
type preparedLine struct {
	PrepareMS float64 `json:"prepare_ms"`
}

// mynahdMalloc is the C allocator's tuning mynahd applies as it loads
// (cmd/internal/memory memory_cgo.go: at most 2 arenas, a fixed 256 KiB
// mmap threshold, raised while a session is built), here as the
// environment variables glibc reads itself; keep in step with ArenaMax and
// MMapThreshold there. As in
// mynahd, MYNAH_MALLOC_TUNE=0 or GLIBC_TUNABLES leaves glibc's defaults,
// and a variable already set is kept.
func mynahdMalloc(env []string) []string {
	if strings.HasPrefix(os.Getenv("MYNAH_MALLOC_TUNE"), "0") || os.Getenv("GLIBC_TUNABLES") != "" {
		return env
	}
	for _, kv := range []string{"MALLOC_ARENA_MAX=2", "MALLOC_MMAP_THRESHOLD_=262144"} {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := os.LookupEnv(name); !set {
			env = append(env, kv)
		}
	}
	return env
}

// mallocNote names the C allocator settings this worker runs with.
func mallocNote() string {
	var set []string
	for _, name := range []string{"MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"} {
		if v, ok := os.LookupEnv(name); ok {
			set = append(set, name+"="+v)
		}
	}
	if len(set) == 0 {
		return ", glibc malloc defaults"
	}
	return ", " + strings.Join(set, " ")
}

func selfRSS() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("rss: %w", err)
	}
	return peer.StatusKB(status, "VmRSS")
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
