package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/onnx"
)

const voiceUsage = `Usage:
  mynah voice demo [--kind piper|cloning|style] --out DIR
                               build a demo voice (deterministic, ~robotic)
  mynah voice info PATH        describe the Piper voice at PATH
  mynah voice install NAME|ALIAS|LANGUAGE|URL [--quality medium] [--quantize MODE]
                               download a Piper voice from the catalog (or a URL),
                               check it and prepare it for this CPU
  mynah voice list [--available] [--language en_US]
                               list the installed voices (and the catalog's)
  mynah voice remove NAME      remove an installed voice
`

func runVoice(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, voiceUsage)
		return usageError("voice needs a subcommand")
	}
	switch args[0] {
	case "demo":
		return runVoiceDemo(args[1:], stdout, stderr)
	case "info":
		return runVoiceInfo(args[1:], stdout, stderr)
	case "install":
		return runVoiceInstall(ctx, args[1:], stdout, stderr)
	case "list":
		return runVoiceList(ctx, args[1:], stdout, stderr)
	case "remove":
		return runVoiceRemove(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stderr, voiceUsage)
		return nil
	}
	fmt.Fprint(stderr, voiceUsage)
	return usageError("unknown voice subcommand %q", args[0])
}

func runVoiceDemo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voice demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write the voice into (created if missing); put it in voices.dir under the name it should have")
	kind := fs.String("kind", "piper", "piper: the Piper-format demo voice; cloning: a voice.json bundle with a speaker\nencoder, a KV-cached decoder and a vocoder (enroll speakers into it); style: a\nKokoro-format bundle with a pack of three voices")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mynah voice demo [--kind piper|cloning|style] --out DIR\n\nBuilds one of mynah's own demo voices: small ONNX models made by signal\nprocessing inside the graph (robotic speech, no downloads). The same options\nalways give byte-identical files.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *out == "" && len(pos) == 1 {
		*out = pos[0]
	} else if len(pos) > 0 {
		return usageError("unexpected arguments %q", pos)
	}
	if *out == "" {
		return usageError("voice demo needs --out DIR")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("voice demo: %w", err)
	}
	switch *kind {
	case "piper":
	case "cloning", "style":
		write := demo.WriteCloning
		if *kind == "style" {
			write = func(dir string, _ *demo.CloningOptions) error { return demo.WriteStyle(dir, nil) }
		}
		if err := write(*out, nil); err != nil {
			return fmt.Errorf("voice demo: %w", err)
		}
		b, err := bundle.Load(*out)
		if err != nil {
			return fmt.Errorf("voice demo: check written bundle: %w", err)
		}
		fmt.Fprintf(stdout, "%s: %s bundle %q, voice.json sha256 %s\n", *out, b.Manifest.Engine, b.Manifest.Name, b.Digest[:16])
		return nil
	default:
		return usageError("--kind %q: want piper, cloning or style", *kind)
	}
	path, err := demo.Write(*out, nil)
	if err != nil {
		return fmt.Errorf("voice demo: %w", err)
	}
	m, err := onnx.ReadFile(path, nil)
	if err != nil {
		return fmt.Errorf("voice demo: check written model: %w", err)
	}
	fmt.Fprintf(stdout, "%s (%d bytes, sha256 %s)\n", path, m.Size, m.Digest[:16])
	return nil
}

func runVoiceInfo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("voice info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("voice info needs one PATH")
	}
	modelPath, err := voice.FindPiper(pos[0])
	if err != nil {
		return err
	}
	cfg, err := voice.ReadPiperConfig(modelPath + ".json")
	if err != nil {
		return err
	}
	m, err := onnx.ReadFile(modelPath, nil)
	if err != nil {
		return err
	}
	speakers := make([]string, 0, len(cfg.SpeakerIDMap))
	for name, id := range cfg.SpeakerIDMap {
		speakers = append(speakers, fmt.Sprintf("%d=%s", id, name))
	}
	ptype := cfg.PhonemeType
	if ptype == "" {
		ptype = voice.PhonemeEspeak
	}
	fmt.Fprintf(stdout, "model        %s\nsize         %d bytes\nsha256       %s\nsample rate  %d Hz\nphonemes     %s (espeak voice %q), %d symbols\nspeakers     %d %s\ninference    noise_scale %.3f, length_scale %.3f, noise_w %.3f\nopset        %d\n",
		modelPath, m.Size, m.Digest, cfg.Audio.SampleRate, ptype, cfg.Espeak.Voice, len(cfg.PhonemeIDMap),
		max(cfg.NumSpeakers, 1), strings.Join(slices.Sorted(slices.Values(speakers)), " "),
		cfg.Inference.NoiseScale, cfg.Inference.LengthScale, cfg.Inference.NoiseW, m.Opset(""))
	return nil
}
