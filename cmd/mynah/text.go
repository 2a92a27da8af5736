package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/quant/ort"
)

const textUsage = `Usage: mynah text [flags] [--] "text"

Shows what a voice will say, without saying it: the text as mynah reads it
(numbers, units, times, dates, money and symbols in words, Markdown gone),
then, sentence by sentence, the phonemes the voice's front end makes and the
ids its model is given. Use it to check a Home Assistant template before it
goes into an automation:

  mynah text "It is {{ states('sensor.outside') }} °C"   (as rendered)
  mynah text --json "Battery at 15 %" | jq .normalized

--json prints one JSON object per sentence and line: sentence (from 1),
normalized, phonemes, ids and unknown (phonemes the voice has no id for; it
skips them when it speaks). --no-normalize shows the text as written, as a
say command with "normalize": false speaks it. Text "-" reads standard input.

Flags:
`

// textFlags are the options of "mynah text"; the voice and reading flags
// are say's.
type textFlags struct {
	sayFlags
	json bool
}

func runText(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f textFlags
	fs := flag.NewFlagSet("text", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, textUsage); fs.PrintDefaults() }
	fs.StringVar(&f.voice, "voice", "", "the voice whose reading to show (as mynah say's --voice; default $MYNAH_VOICE,\nelse the demo voice)")
	fs.BoolVar(&f.json, "json", false, "one JSON object per sentence")
	addReadingFlags(fs, &f.sayFlags)
	fs.StringVar(&f.ortLib, "ort-lib", "", "path to libonnxruntime.so (default: $MYNAH_ORT_LIB, ./.ort, system)")
	fs.BoolVar(&f.verbose, "v", false, "log details")
	txt, err := parseTextArgs(fs, args, &f.sayFlags)
	if err != nil {
		return err
	}
	log := newLogger(stderr, f.verbose)
	voicePath, loc, err := findVoice(f.voice, stderr)
	if err != nil {
		return err
	}
	rt, err := ort.Open(&ort.Options{LibraryPath: f.ortLib, Logger: log, Building: memory.SessionBuilding()})
	if err != nil {
		return err
	}
	defer rt.Close()
	e, err := engine.Open(&engine.Options{Runtime: rt, Dir: loc.dir, Default: loc.name, Logger: log,
		Piper:       &voice.PiperOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU}, Logger: log},
		NoNormalize: f.noNormalize, Emoji: text.Emoji(f.emoji)})
	if err != nil {
		return fmt.Errorf("open voice %s: %w", voicePath, err)
	}
	defer e.Close()
	readings, err := e.Read(ctx, engine.Request{Text: txt})
	if err != nil {
		return err
	}
	if f.json {
		return printReadingsJSON(stdout, readings)
	}
	printReadings(stdout, readings)
	return nil
}

// addReadingFlags adds the flags that change how a text is read, shared by
// say and text.
func addReadingFlags(fs *flag.FlagSet, f *sayFlags) {
	fs.BoolVar(&f.noNormalize, "no-normalize", false, "speak the text as written: no numbers, units or times read into words, Markdown kept\n(mynahd's text.normalize: false, a say command's \"normalize\": false)")
	fs.StringVar(&f.emoji, "emoji", string(text.EmojiDrop), "what to do with emoji: drop, or name (read their Unicode names; English voices)")
}

// parseTextArgs parses say's or text's command line and returns the
// text, checked as mynahd would check it.
func parseTextArgs(fs *flag.FlagSet, args []string, f *sayFlags) (string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if err := checkEmoji(f.emoji); err != nil {
		return "", err
	}
	txt, err := sayText(pos)
	if err != nil {
		return "", err
	}
	return txt, checkSayText(txt)
}

func checkEmoji(s string) error {
	if s != string(text.EmojiDrop) && s != string(text.EmojiName) {
		return usageError("--emoji %q: want %s or %s", s, text.EmojiDrop, text.EmojiName)
	}
	return nil
}

// printReadings writes the whole reading, then each sentence's phonemes
// and ids.
func printReadings(w io.Writer, readings []engine.Reading) {
	all := make([]string, len(readings))
	for i, r := range readings {
		all[i] = r.Sentence
	}
	fmt.Fprintln(w, strings.Join(all, " "))
	for i, r := range readings {
		fmt.Fprintf(w, "\nsentence %d: %s\n", i+1, r.Sentence)
		fmt.Fprintf(w, "  phonemes: %s\n", joinPhonemes(r.Phonemes))
		ids := make([]string, len(r.IDs))
		for j, id := range r.IDs {
			ids[j] = strconv.FormatInt(id, 10)
		}
		fmt.Fprintf(w, "  ids:      %s\n", strings.Join(ids, " "))
		if len(r.Unknown) > 0 {
			fmt.Fprintf(w, "  unknown:  %s (skipped: the voice has no id for them)\n", strings.Join(quoteAll(r.Unknown), " "))
		}
	}
}

// joinPhonemes writes IPA phonemes (one character each) as one string, and
// multi-letter ones (pinyin initials and finals) separated by spaces.
func joinPhonemes(ph []string) string {
	for _, p := range ph {
		if utf8.RuneCountInString(p) != 1 {
			return strings.Join(ph, " ")
		}
	}
	return strings.Join(ph, "")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// readingJSON is one line of mynah text --json.
type readingJSON struct {
	Sentence   int      `json:"sentence"`
	Normalized string   `json:"normalized"`
	Phonemes   []string `json:"phonemes"`
	IDs        []int64  `json:"ids"`
	Unknown    []string `json:"unknown"`
}

func printReadingsJSON(w io.Writer, readings []engine.Reading) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, r := range readings {
		line := readingJSON{Sentence: i + 1, Normalized: r.Sentence, Phonemes: r.Phonemes, IDs: r.IDs, Unknown: r.Unknown}
		if line.Unknown == nil {
			line.Unknown = []string{}
		}
		if line.IDs == nil {
			line.IDs = []int64{}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
