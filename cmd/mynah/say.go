package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/portaudio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/quant/ort"
)

const sayUsage = `Usage: mynah say [flags] "text"

Speaks text through the default audio device (PortAudio), or writes it to a
WAV file with --out. Text "-" (or no text with a pipe on standard input)
reads standard input; like mynahd, mynah say takes at most 5000 characters.

It runs the same speech engine as mynahd. --voice is any kind of voice: a
Piper voice (a directory holding NAME.onnx + NAME.onnx.json, or the
NAME.onnx file), a style-vector bundle or a cloning (pipeline) bundle (a
directory with a voice.json). Without --voice, mynah uses $MYNAH_VOICE, else
the demo voice, which it builds on first use.

Numbers, units, times, dates, money, symbols and Markdown are read into
words first, as mynahd reads them ("mynah text" shows how); --no-normalize
speaks the text as written.

Sentences already spoken come from the phrase cache (--cache), and the next
sentence is synthesized while one plays. --speaker names a speaker of the
voice: a Piper speaker, a style pack's voice, or, for a cloning voice, a
shared speaker cloned into the cache file (mynah enroll, through mynahd).
While mynahd runs with the same cache file, the file is locked: mynah say
then speaks uncached, without the cloned speakers.

The summary line gives the voice, the execution provider and the output, the
time to first audio, the real-time factor, and per sentence whether it came
from the phrase cache ("cache: hit,miss").

Flags:
`

// sayFlags are the options of "mynah say".
type sayFlags struct {
	voice, speaker, out, fallback, device string
	rate                                  float64
	lengthScale, noiseScale, noiseW       optFloat
	silence                               time.Duration
	ortLib, provider, precision           string
	threads                               int
	cacheFile                             string
	noCache                               bool
	noNormalize                           bool
	emoji                                 string
	verbose                               bool
}

// optFloat is a float flag that knows whether it was set.
type optFloat struct{ v *float32 }

func (o *optFloat) String() string {
	if o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *optFloat) Set(s string) error {
	var f float32
	if _, err := fmt.Sscan(s, &f); err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	o.v = &f
	return nil
}

// sayCacheLockWait is how long mynah say waits for the cache file's lock
// before it concludes mynahd holds it and speaks uncached.
const sayCacheLockWait = 250 * time.Millisecond

func runSay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f sayFlags
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sayUsage); fs.PrintDefaults() }
	fs.StringVar(&f.voice, "voice", "", "the voice: a Piper voice directory or NAME.onnx (with NAME.onnx.json beside it),\nor a style-vector or cloning bundle directory (with a voice.json)")
	fs.StringVar(&f.speaker, "speaker", "", "speaker name or number: of a multi-speaker Piper voice, a style pack's voice,\nor a speaker cloned into the --cache file (cloning voices)")
	fs.Float64Var(&f.rate, "rate", 1, "speaking rate: 2 is twice as fast (0.25..4)")
	fs.Var(&f.lengthScale, "length-scale", "override the voice's length_scale (phoneme duration; Piper voices)")
	fs.Var(&f.noiseScale, "noise-scale", "override the voice's noise_scale (0 = deterministic; Piper voices)")
	fs.Var(&f.noiseW, "noise-w", "override the voice's noise_w (duration variation; Piper voices)")
	fs.StringVar(&f.out, "out", "", "write a WAV file instead of playing")
	fs.StringVar(&f.fallback, "fallback-wav", "mynah-say.wav", "WAV file to write when there is no audio device")
	fs.StringVar(&f.device, "device", "", "audio output device (name or part of it; see mynah devices)")
	fs.DurationVar(&f.silence, "sentence-silence", voice.DefaultSentenceSilence, "pause between sentences")
	fs.StringVar(&f.cacheFile, "cache", defaultSayCache(), "phrase cache and cloned speakers file (mynahd's cache.file to share its speakers\nwhen it is stopped); \"\" turns the cache off")
	fs.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the phrase cache (same as --cache \"\")")
	fs.StringVar(&f.ortLib, "ort-lib", "", "path to libonnxruntime.so (default: $MYNAH_ORT_LIB, ./.ort, system)")
	fs.StringVar(&f.provider, "provider", "auto", "execution provider: auto, cpu, cuda or tensorrt")
	fs.StringVar(&f.precision, "precision", "auto", "voice variant: auto (the smallest that passed its quality gate here), fp32, fp16,\nint8 or nbits")
	fs.IntVar(&f.threads, "threads", 0, "ONNX Runtime intra-op threads (0 = one per core)")
	addReadingFlags(fs, &f)
	fs.BoolVar(&f.verbose, "v", false, "log details (with the normalized text)")
	txt, err := parseTextArgs(fs, args, &f)
	if err != nil {
		return err
	}
	log := newLogger(stderr, f.verbose)

	provider, err := ort.ParseProvider(f.provider)
	if err != nil {
		return usageError("%v", err)
	}
	voicePath, loc, err := findVoice(f.voice, stderr)
	if err != nil {
		return err
	}
	// As mynahd, glibc was tuned as the binary loaded (package memory),
	// and the memory of speech is given back while a long say goes on.
	// Unlike mynahd, the mmap threshold stays low while the voice's
	// session is built (no memory.SessionBuilding): a say's peak RSS is
	// its load, and raising it there made the 15 M-parameter voice's peak
	// 20 MB higher (254 vs 233 MB, and from run to run 232–303) for a
	// load about 5% faster.
	memory.LogTuning(log)
	rt, err := ort.Open(&ort.Options{LibraryPath: f.ortLib, Logger: log})
	if err != nil {
		return err
	}
	defer rt.Close()

	store, cacheNote := openSayCache(f, stderr, log)
	if store != nil {
		defer func() {
			if err := store.Close(); err != nil {
				log.Warn("close phrase cache", "file", f.cacheFile, "err", err)
			}
		}()
	}
	engineProvider := string(provider)
	if provider == ort.ProviderAuto {
		engineProvider = ""
	}
	opts := &engine.Options{
		Runtime: rt,
		Dir:     loc.dir,
		Default: loc.name,
		Piper: &voice.PiperOptions{
			// As mynahd's default onnx.arena; the process ends after the say.
			Session:         &ort.SessionOptions{Provider: provider, IntraOpThreads: f.threads, CPUArena: true},
			SentenceSilence: f.silence,
			Logger:          log.With("component", "voice"),
		},
		Precision:     f.precision,
		Provider:      engineProvider,
		Store:         store,
		ReleaseMemory: (&memory.Releaser{Store: store, Log: log.With("component", "memory")}).Release,
		NoNormalize:   f.noNormalize,
		Emoji:         text.Emoji(f.emoji),
		Logger:        log.With("component", "engine"),
	}
	e, err := engine.Open(opts)
	if err != nil {
		return fmt.Errorf("open voice %s: %w", voicePath, err)
	}
	defer e.Close()
	info, err := e.Preload(ctx)
	if err != nil {
		return fmt.Errorf("load voice %s: %w", voicePath, err)
	}

	sink, dest, err := openSink(f, info.SampleRate, stderr, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "voice %s (%d Hz, %d speaker(s)), provider %s, output %s\n",
		info.Name, info.SampleRate, len(info.Speakers), info.Provider, dest)

	req := engine.Request{Text: txt, Speaker: f.speaker, Rate: f.rate,
		LengthScale: f.lengthScale.v, NoiseScale: f.noiseScale.v, NoiseW: f.noiseW.v}
	st, err := play(ctx, e, req, sink)
	if err == nil {
		err = sink.Drain(ctx)
	}
	if cerr := sink.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if dest == f.out || dest == f.fallback {
			os.Remove(dest) // a failed say leaves no partial WAV behind
		}
		return sayError(err, f, loc, store, cacheNote)
	}
	rtf := 0.0
	if st.audio > 0 {
		rtf = st.synth.Seconds() / st.audio.Seconds()
	}
	fmt.Fprintf(stderr, "%d sentence(s), %.1f s of speech; first audio after %d ms, synthesis %d ms (real-time factor %.3f); cache: %s\n",
		len(st.sources), st.audio.Seconds(), st.firstAudio.Milliseconds(), st.synth.Milliseconds(), rtf, st.cacheSummary(store != nil))
	if st.unknown > 0 {
		fmt.Fprintf(stderr, "note: %d phoneme(s) unknown to this voice were skipped\n", st.unknown)
	}
	return nil
}

// sayStats is what play measured.
type sayStats struct {
	firstAudio time.Duration // from the request to the first sentence at the sink
	synth      time.Duration // the engine's time: cache lookups and synthesis
	audio      time.Duration // of speech and pauses
	sources    []bool        // per sentence: true if it came from the phrase cache
	unknown    int           // phonemes the voice had no id for, skipped
}

// cacheSummary is the per-sentence cache source: "hit,miss,hit", or "off".
func (st sayStats) cacheSummary(on bool) string {
	if !on {
		return "off"
	}
	words := make([]string, len(st.sources))
	for i, hit := range st.sources {
		words[i] = "miss"
		if hit {
			words[i] = "hit"
		}
	}
	return strings.Join(words, ",")
}

// play speaks req into sink through audio.Stream: sentence n plays while
// the engine works on n+1, never further ahead. On a failure or
// cancellation the sink drops what it holds.
func play(ctx context.Context, e *engine.Engine, req engine.Request, sink audio.Sink) (sayStats, error) {
	var st sayStats
	start := time.Now()
	var playErr error
	err := audio.Stream(ctx,
		func(ctx context.Context, emit func(engine.Chunk) error) error {
			return e.Speak(ctx, req, emit)
		},
		func(ctx context.Context, c engine.Chunk) error {
			if err := sink.Write(ctx, c.PCM); err != nil {
				playErr = err
				return err
			}
			if len(st.sources) == 0 {
				st.firstAudio = time.Since(start)
			}
			st.sources = append(st.sources, c.Cached)
			st.synth += c.Took
			st.unknown += c.Unknown
			st.audio += c.PCM.Duration() + c.Silence
			if c.Silence > 0 {
				if err := sink.Write(ctx, audio.Silence(c.PCM.Rate, c.PCM.Channels, c.Silence)); err != nil {
					playErr = err
					return err
				}
			}
			return nil
		})
	if playErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		_ = sink.Abort()
	}
	return st, err
}

// sayError adds to an engine error what to do about it.
func sayError(err error, f sayFlags, loc sayVoice, store *cache.Store, cacheNote string) error {
	switch {
	case errors.Is(err, engine.ErrNothingToSay):
		return fmt.Errorf("%w (give it words to speak, not markup alone)", err)
	case !errors.Is(err, voice.ErrUnknownSpeaker) || loc.kind != bundle.EnginePipeline:
		return err
	case store == nil && cacheNote != "":
		return fmt.Errorf("%w\n(the cache file %s)", err, cacheNote)
	case store == nil:
		return fmt.Errorf("%w\n(the cache is off here: give --cache FILE, the file the speaker was cloned into)", err)
	}
	return fmt.Errorf("%w\n(no speaker %q is cloned in %s; clone one through mynahd with mynah enroll --name %s REF.wav, then speak through mynahd, or stop it and give its cache.file as --cache)",
		err, f.speaker, f.cacheFile, f.speaker)
}

// checkSayText applies mynahd's limits on a request's text: no NUL, at most
// daemon.DefaultMaxTextRunes characters, and words to say once markup is
// removed.
func checkSayText(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return usageError("the text contains a NUL character")
	}
	if n := utf8.RuneCountInString(s); n > daemon.DefaultMaxTextRunes {
		return usageError("the text is %d characters, over mynahd's limit of %d: split it, and say each part", n, daemon.DefaultMaxTextRunes)
	}
	if text.IsEmpty(s, nil) {
		return fmt.Errorf("%w in %q once markup is removed (give it words to speak)", engine.ErrNothingToSay, shorten(s, 60))
	}
	return nil
}

// shorten cuts s to at most n characters for a message.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// defaultSayCache is the --cache default: cache.db in the user's cache
// directory, beside the demo voice; "" (no cache) when there is none.
func defaultSayCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "mynah", "cache.db")
}

// openSayCache opens the phrase cache of --cache. A cache that cannot be
// opened does not stop speech: it says why on stderr and returns nil, with
// the reason in a few words for a later error about cloned speakers. A
// file locked by a running mynahd is the usual case.
func openSayCache(f sayFlags, stderr io.Writer, log *slog.Logger) (*cache.Store, string) {
	if f.noCache || f.cacheFile == "" {
		return nil, ""
	}
	if err := os.MkdirAll(filepath.Dir(f.cacheFile), 0o755); err != nil {
		fmt.Fprintf(stderr, "note: no phrase cache (%v); speaking uncached\n", err)
		return nil, fmt.Sprintf("%s could not be opened: %v", f.cacheFile, err)
	}
	store, err := cache.Open(f.cacheFile, &cache.Options{Timeout: sayCacheLockWait, Logger: log.With("component", "cache")})
	switch {
	case errors.Is(err, cache.ErrLocked):
		fmt.Fprintf(stderr, "note: the cache file %s is in use by another process, most likely a running mynahd; speaking uncached, without its cloned speakers\n", f.cacheFile)
		return nil, fmt.Sprintf("%s is locked by another process: a running mynahd? speak through it, or stop it", f.cacheFile)
	case err != nil:
		fmt.Fprintf(stderr, "note: phrase cache unavailable (%v); speaking uncached\n", err)
		return nil, fmt.Sprintf("%s could not be opened: %v", f.cacheFile, err)
	}
	if r := store.Recovery(); r != nil {
		fmt.Fprintf(stderr, "note: the cache file %s was damaged (%s): moved to %s, started empty\n", f.cacheFile, r.Reason, r.MovedTo)
	}
	return store, ""
}

// sayVoice is a --voice as the engine opens it.
type sayVoice struct {
	dir  string // the directory it lies in
	name string // its name there: the directory's, or NAME of NAME.onnx
	kind string // "piper", or the bundle's engine
}

// locateVoice checks --voice and says where the engine finds it. Checking
// first tells a mistake in terms of the path given, not of the directory
// around it.
func locateVoice(path string) (sayVoice, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return sayVoice{}, fmt.Errorf("voice %s: %w", path, err)
	}
	dir, base := filepath.Split(abs)
	st, err := os.Stat(abs)
	if err != nil {
		return sayVoice{}, voiceNotFound(fmt.Errorf("%w: %v", voice.ErrVoiceNotFound, err))
	}
	if !st.IsDir() {
		name, ok := strings.CutSuffix(base, ".onnx")
		if !ok || name == "" {
			return sayVoice{}, voiceNotFound(fmt.Errorf("%w: %s is neither a directory nor a NAME.onnx file", voice.ErrVoiceNotFound, path))
		}
		if _, err := os.Stat(abs + ".json"); err != nil {
			return sayVoice{}, voiceNotFound(fmt.Errorf("%w: %s has no %s beside it", voice.ErrVoiceNotFound, path, base+".json"))
		}
		return sayVoice{dir, name, "piper"}, nil
	}
	if base == "" {
		return sayVoice{}, voiceNotFound(fmt.Errorf("%w: %s is not a voice directory", voice.ErrVoiceNotFound, path))
	}
	v := sayVoice{dir, base, "piper"}
	manifest := filepath.Join(abs, bundle.ManifestName)
	data, err := os.ReadFile(manifest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := voice.FindPiper(abs); err != nil {
			return sayVoice{}, voiceNotFound(err)
		}
	case err != nil:
		return sayVoice{}, fmt.Errorf("voice %s: %w", path, err)
	default:
		m, err := bundle.Parse(data)
		if err != nil {
			return sayVoice{}, fmt.Errorf("voice %s: %w", manifest, err)
		}
		if m.Engine != bundle.EngineStyleVector && m.Engine != bundle.EnginePipeline {
			return sayVoice{}, fmt.Errorf("voice %s: engine %q is not one mynah runs (%s or %s)", manifest, m.Engine, bundle.EngineStyleVector, bundle.EnginePipeline)
		}
		v.kind = m.Engine
	}
	// The engine gives a NAME.onnx beside the directory NAME the same
	// name, and would speak that one.
	if _, err := os.Stat(abs + ".onnx.json"); err == nil {
		if _, err := os.Stat(abs + ".onnx"); err == nil {
			return sayVoice{}, fmt.Errorf("voice %s: %s.onnx beside it has the same name; pass --voice %s.onnx if you mean that one, or move one of them", path, abs, abs)
		}
	}
	return v, nil
}

// voiceNotFound says what a voice is and how to get one.
func voiceNotFound(err error) error {
	return fmt.Errorf("%w\n(a voice is a directory with NAME.onnx and NAME.onnx.json, NAME.onnx itself, or a bundle directory with a voice.json; build the demo voice with: mynah voice demo --out DIR)", err)
}

// sayText joins the positional arguments, or reads standard input for "-"
// or when nothing was given and input is piped.
func sayText(pos []string) (string, error) {
	if len(pos) == 1 && pos[0] == "-" || len(pos) == 0 && !stdinIsTerminal() {
		data, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20+1))
		if err != nil {
			return "", fmt.Errorf("read standard input: %w", err)
		}
		if len(data) > 1<<20 {
			return "", usageError("standard input is over 1 MiB")
		}
		return string(data), nil
	}
	if len(pos) == 0 {
		return "", usageError(`nothing to say: mynah say "text"`)
	}
	return strings.Join(pos, " "), nil
}

func stdinIsTerminal() bool {
	st, err := os.Stdin.Stat()
	return err != nil || st.Mode()&os.ModeCharDevice != 0
}

// defaultVoice picks the voice: the flag, $MYNAH_VOICE, or the demo voice
// in the user's cache directory, built there the first time.
// findVoice is the voice a --voice flag names (defaultVoice), located.
func findVoice(flagValue string, stderr io.Writer) (string, sayVoice, error) {
	path, err := defaultVoice(flagValue, stderr)
	if err != nil {
		return "", sayVoice{}, err
	}
	loc, err := locateVoice(path)
	return path, loc, err
}

func defaultVoice(flagValue string, stderr io.Writer) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if env := os.Getenv("MYNAH_VOICE"); env != "" {
		return env, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --voice given and no cache directory for the demo voice: %w", err)
	}
	dir := filepath.Join(cache, "mynah", "voices", "mynah-demo")
	if _, err := voice.FindPiper(dir); err == nil {
		return dir, nil
	}
	fmt.Fprintf(stderr, "building the demo voice in %s\n", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("demo voice: %w", err)
	}
	if _, err := demo.Write(dir, nil); err != nil {
		return "", fmt.Errorf("demo voice: %w", err)
	}
	return dir, nil
}

// openSink opens the WAV file of --out, the audio device, or — when there
// is no device — the fallback WAV file, and says which.
func openSink(f sayFlags, rate int, stderr io.Writer, log interface{ Warn(string, ...any) }) (audio.Sink, string, error) {
	if f.out != "" {
		s, err := audio.NewWAVFileSink(f.out, rate, 1)
		return s, f.out, err
	}
	if f.device == "" && !portaudio.DefaultOutputAvailable() {
		fmt.Fprintf(stderr, "no audio output device found; writing the speech to %s instead\n", f.fallback)
		s, err := audio.NewWAVFileSink(f.fallback, rate, 1)
		return s, f.fallback, err
	}
	s, err := portaudio.Open(&portaudio.Options{Device: f.device})
	if err != nil {
		if f.device != "" || errors.Is(err, portaudio.ErrUnsupported) {
			return nil, "", err
		}
		fmt.Fprintf(stderr, "audio device failed (%v); writing the speech to %s instead\n", err, f.fallback)
		s, err := audio.NewWAVFileSink(f.fallback, rate, 1)
		return s, f.fallback, err
	}
	name := "default audio device"
	if f.device != "" {
		name = "audio device " + f.device
	}
	return s, name, nil
}
