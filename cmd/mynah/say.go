package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/portaudio"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

const sayUsage = `Usage: mynah say [flags] "text"

Speaks text through the default audio device (PortAudio), or writes it to a
WAV file with --out. Text "-" (or no text with a pipe on standard input)
reads standard input. Without --voice, mynah uses $MYNAH_VOICE, else the demo
voice, which it builds on first use.

Flags:
`

// sayFlags are the options of "mynah say".
type sayFlags struct {
	voice, speaker, out, fallback, device string
	rate                                  float64
	lengthScale, noiseScale, noiseW       optFloat
	silence                               time.Duration
	ortLib, provider                      string
	threads                               int
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

func runSay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f sayFlags
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sayUsage); fs.PrintDefaults() }
	fs.StringVar(&f.voice, "voice", "", "Piper voice: a directory or a NAME.onnx with NAME.onnx.json beside it")
	fs.StringVar(&f.speaker, "speaker", "", "speaker name or number (multi-speaker voices)")
	fs.Float64Var(&f.rate, "rate", 1, "speaking rate: 2 is twice as fast (0.25..4)")
	fs.Var(&f.lengthScale, "length-scale", "override the voice's length_scale (phoneme duration)")
	fs.Var(&f.noiseScale, "noise-scale", "override the voice's noise_scale (0 = deterministic)")
	fs.Var(&f.noiseW, "noise-w", "override the voice's noise_w (duration variation)")
	fs.StringVar(&f.out, "out", "", "write a WAV file instead of playing")
	fs.StringVar(&f.fallback, "fallback-wav", "mynah-say.wav", "WAV file to write when there is no audio device")
	fs.StringVar(&f.device, "device", "", "audio output device (name or part of it; see mynah devices)")
	fs.DurationVar(&f.silence, "sentence-silence", voice.DefaultSentenceSilence, "pause between sentences")
	fs.StringVar(&f.ortLib, "ort-lib", "", "path to libonnxruntime.so (default: $MYNAH_ORT_LIB, ./.ort, system)")
	fs.StringVar(&f.provider, "provider", "auto", "execution provider: auto, cpu, cuda or tensorrt")
	fs.IntVar(&f.threads, "threads", 0, "ONNX Runtime intra-op threads (0 = one per core)")
	fs.BoolVar(&f.verbose, "v", false, "log details")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	txt, err := sayText(pos)
	if err != nil {
		return err
	}
	log := newLogger(stderr, f.verbose)

	provider, err := ort.ParseProvider(f.provider)
	if err != nil {
		return usageError("%v", err)
	}
	voicePath, err := defaultVoice(f.voice, stderr)
	if err != nil {
		return err
	}
	rt, err := ort.Open(&ort.Options{LibraryPath: f.ortLib, Logger: log})
	if err != nil {
		return err
	}
	defer rt.Close()
	v, err := voice.LoadPiper(rt, voicePath, &voice.PiperOptions{
		Session:         &ort.SessionOptions{Provider: provider, IntraOpThreads: f.threads},
		SentenceSilence: f.silence,
		Logger:          log,
	})
	if errors.Is(err, voice.ErrVoiceNotFound) {
		return fmt.Errorf("%w\n(a voice is NAME.onnx with NAME.onnx.json beside it; build the demo voice with: mynah voice demo --out DIR)", err)
	}
	if err != nil {
		return err
	}
	defer v.Close()
	info := v.Info()

	sink, dest, err := openSink(f, info.SampleRate, stderr, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "voice %s (%d Hz, %d speaker(s)), provider %s, output %s\n",
		info.Name, info.SampleRate, len(info.Speakers), info.Provider, dest)

	req := voice.Request{Text: txt, Speaker: f.speaker, Rate: f.rate,
		LengthScale: f.lengthScale.v, NoiseScale: f.noiseScale.v, NoiseW: f.noiseW.v}
	st, err := voice.Play(ctx, v, req, sink)
	if err == nil {
		err = sink.Drain(ctx)
	}
	if cerr := sink.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	rtf := 0.0
	if st.Audio > 0 {
		rtf = st.Synth.Seconds() / st.Audio.Seconds()
	}
	fmt.Fprintf(stderr, "%d sentence(s), %.1f s of speech; first audio after %d ms, synthesis %d ms (real-time factor %.3f)\n",
		st.Sentences, st.Audio.Seconds(), st.FirstAudio.Milliseconds(), st.Synth.Milliseconds(), rtf)
	if st.Unknown > 0 {
		fmt.Fprintf(stderr, "note: %d phoneme(s) unknown to this voice were skipped\n", st.Unknown)
	}
	return nil
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
