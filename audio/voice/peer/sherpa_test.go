package peer_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/audio/voice/peer"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

func TestSherpaTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ids     map[string][]int64
		want    string
		skipped []string
	}{
		{"piper's specials in id order", map[string][]int64{"$": {2}, "_": {0}, "^": {1}}, "_ 0\n^ 1\n$ 2\n", nil},
		// sherpa reads a line that holds only an id as the space symbol.
		{"space", map[string][]int64{"_": {0}, " ": {3}, "a": {4}}, "_ 0\n  3\na 4\n", nil},
		{"IPA and a combining mark", map[string][]int64{"ə": {59}, "\u0303": {141}, "ˈ": {120}}, "ə 59\nˈ 120\n\u0303 141\n", nil},
		{"several codepoints", map[string][]int64{"a": {4}, "ang": {135}, "üe": {160}}, "a 4\n", []string{"ang", "üe"}},
		{"other whitespace", map[string][]int64{"\t": {5}, "\n": {6}, "a": {4}}, "a 4\n", []string{"\t", "\n"}},
		{"several ids", map[string][]int64{"a": {7, 8}, "b": {1}}, "b 1\n", []string{"a"}},
		{"no ids", map[string][]int64{"a": {}, "b": {1}}, "b 1\n", nil},
		{"invalid UTF-8", map[string][]int64{"\xff": {9}, "b": {1}}, "b 1\n", []string{"\xff"}},
		{"same id twice: by symbol", map[string][]int64{"b": {1}, "a": {1}}, "a 1\nb 1\n", nil},
		{"empty", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := peer.SherpaTokens(tc.ids)
			if string(got) != tc.want {
				t.Errorf("tokens.txt:\n%q\nwant\n%q", got, tc.want)
			}
			if !slices.Equal(skipped, tc.skipped) {
				t.Errorf("skipped %q, want %q", skipped, tc.skipped)
			}
		})
	}
}

// readSherpaTokens reads tokens.txt the way sherpa-onnx does: a line of
// one field is the space symbol with that id.
func readSherpaTokens(t *testing.T, data []byte) map[rune]int64 {
	t.Helper()
	out := make(map[rune]int64)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sym := " "
		if len(f) == 2 {
			sym = f[0]
		} else if len(f) != 1 {
			t.Fatalf("line %q: want \"symbol id\"", sc.Text())
		}
		id, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		r := []rune(sym)
		if len(r) != 1 {
			t.Fatalf("line %q: symbol of %d codepoints", sc.Text(), len(r))
		}
		if _, dup := out[r[0]]; dup {
			t.Fatalf("line %q: symbol twice", sc.Text())
		}
		out[r[0]] = id
	}
	return out
}

func TestExportSherpa(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(dir string) (string, error)
	}{
		{"demo voice", func(dir string) (string, error) { return demo.Write(dir, nil) }},
		{"bench model", func(dir string) (string, error) { return writeBenchVoice(dir, smallBench) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			path, err := tc.write(src)
			if err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			v, err := peer.ExportSherpa(src, filepath.Join(t.TempDir(), "sherpa"))
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the original model changed")
			}
			cfg, err := voice.ReadPiperConfig(path + ".json")
			if err != nil {
				t.Fatal(err)
			}

			m, err := onnx.ReadFile(v.Model, nil)
			if err != nil {
				t.Fatalf("exported model does not read back: %v", err)
			}
			md := m.Metadata()
			for key, want := range map[string]string{
				"model_type": "vits", "comment": "piper", "language": cfg.Language.Code, "voice": cfg.Espeak.Voice,
				"has_espeak": "1", "n_speakers": strconv.Itoa(max(cfg.NumSpeakers, 1)),
				"sample_rate": strconv.Itoa(cfg.Audio.SampleRate), "add_blank": "0", "version": peer.SherpaMetadataVersion,
			} {
				if md[key] != want {
					t.Errorf("metadata %s = %q, want %q", key, md[key], want)
				}
			}
			orig, err := onnx.Decode(before, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(orig.Graph(), m.Graph()) {
				t.Error("the exported graph differs from the original's")
			}

			data, err := os.ReadFile(v.Tokens)
			if err != nil {
				t.Fatal(err)
			}
			tokens := readSherpaTokens(t, data)
			for sym, ids := range cfg.PhonemeIDMap {
				if slices.Contains(v.Skipped, sym) {
					continue
				}
				if got, ok := tokens[[]rune(sym)[0]]; !ok || got != ids[0] {
					t.Errorf("tokens.txt: %q is %d (%v), want %d", sym, got, ok, ids[0])
				}
			}
			if len(tokens)+len(v.Skipped) != len(cfg.PhonemeIDMap) {
				t.Errorf("%d tokens and %d skipped for %d symbols", len(tokens), len(v.Skipped), len(cfg.PhonemeIDMap))
			}
			// These voices' maps hold one id per symbol and no whitespace
			// but space: only symbols of several codepoints can be left out.
			for _, sym := range v.Skipped {
				if len([]rune(sym)) == 1 {
					t.Errorf("symbol %q of one codepoint skipped", sym)
				}
			}
		})
	}
}

// smallBench is a narrow benchmodel: the medium one's contract, quickly built.
var smallBench = &benchmodel.Options{Hidden: 16, Filter: 16, EncoderLayers: 1, FlowLayers: 1, WaveNetLayers: 1, DecoderChannels: 16}

func TestSetMetadata(t *testing.T) {
	m := &onnx.Model{Proto: &onnxpb.ModelProto{MetadataProps: []*onnxpb.StringStringEntryProto{
		{Key: "author", Value: "someone"}, {Key: "comment", Value: "old"},
	}}}
	peer.SetMetadata(m, map[string]string{"comment": "piper", "add_blank": "0"})
	var got []string
	for _, p := range m.Proto.GetMetadataProps() {
		got = append(got, p.GetKey()+"="+p.GetValue())
	}
	if want := []string{"author=someone", "add_blank=0", "comment=piper"}; !slices.Equal(got, want) {
		t.Errorf("metadata_props %q, want %q", got, want)
	}
}

func TestExportSherpaInputOrder(t *testing.T) {
	dir := t.TempDir()
	path, err := demo.Write(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := m.Graph().GetInput()
	in[0], in[1] = in[1], in[0]
	if err := onnx.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.ExportSherpa(path, filepath.Join(dir, "sherpa")); !errors.Is(err, peer.ErrSherpaContract) {
		t.Errorf("inputs swapped: %v, want ErrSherpaContract", err)
	}
}
