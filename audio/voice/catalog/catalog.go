// Package catalog reads the Piper voice catalog (the voices.json of the
// rhasspy/piper-voices collection, which Piper and wyoming-piper use),
// resolves what a person asks for (a key, an alias, a voice name or a
// language) to one of its voices, and installs a voice into a voices
// directory: downloaded with resume, checked against the catalog's size
// and md5, validated, and moved into place by one rename, so a directory
// watcher never sees half a voice.
//
// The package has no cgo and knows nothing of ONNX: the caller passes the
// check a voice must pass (Options.Check) before it appears.
package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits on what a catalog may hold.
const (
	// DefaultMaxCatalogBytes bounds a catalog. The collection's
	// voices.json is about a megabyte; the largest entries are
	// multi-speaker voices with their speaker maps.
	DefaultMaxCatalogBytes = 32 << 20
	// MaxVoices bounds the voices of one catalog.
	MaxVoices = 20000
	// MaxKeyLen bounds a key or alias: it becomes a directory name (as
	// voices.default and the engine accept them).
	MaxKeyLen = 64
	// MaxFilesPerVoice bounds a voice's files list.
	MaxFilesPerVoice = 16
	// MaxSpeakers bounds num_speakers and the speaker map.
	MaxSpeakers = 10000
)

// Qualities in the order the collection ranks them.
var qualities = []string{"x_low", "low", "medium", "high"}

// DefaultQuality is the quality chosen for a language or a voice name.
const DefaultQuality = "medium"

// Catalog is a parsed voices.json: the installable voices by key.
type Catalog struct {
	voices  map[string]*Voice
	aliases map[string]string // alias → key
	// Skipped names the entries left out, with why (an upstream catalog
	// may grow entries this version cannot install; one of them must not
	// make the others unusable).
	Skipped []string
}

// Voice is one entry of the catalog.
type Voice struct {
	Key          string           `json:"key"`
	Name         string           `json:"name"`
	Language     Language         `json:"language"`
	Quality      string           `json:"quality"`
	NumSpeakers  int              `json:"num_speakers"`
	SpeakerIDMap map[string]int64 `json:"speaker_id_map"`
	// Files are the voice's files by their path relative to the
	// collection's root (the download URL).
	Files   map[string]File `json:"files"`
	Aliases []string        `json:"aliases"`
}

// Language is a voice's language as the catalog describes it.
type Language struct {
	Code           string `json:"code"`   // en_US
	Family         string `json:"family"` // en
	Region         string `json:"region"` // US
	NameNative     string `json:"name_native"`
	NameEnglish    string `json:"name_english"`
	CountryEnglish string `json:"country_english"`
}

// File is one file of a voice.
type File struct {
	SizeBytes int64  `json:"size_bytes"`
	MD5       string `json:"md5_digest"`
}

// The file names a voice is installed as.
const modelCard = "MODEL_CARD"

// ModelPath is the catalog path of the voice's KEY.onnx.
func (v *Voice) ModelPath() string { return v.fileNamed(v.Key + ".onnx") }

// ConfigPath is the catalog path of the voice's KEY.onnx.json.
func (v *Voice) ConfigPath() string { return v.fileNamed(v.Key + ".onnx.json") }

func (v *Voice) fileNamed(base string) string {
	for _, p := range slices.Sorted(maps.Keys(v.Files)) {
		if path.Base(p) == base {
			return p
		}
	}
	return ""
}

// installFiles are the catalog paths Install fetches, config first (it
// is small and fails fast), then the model, then the model card when
// listed (it carries the voice's license).
func (v *Voice) installFiles() []string {
	files := []string{v.ConfigPath(), v.ModelPath()}
	if card := v.fileNamed(modelCard); card != "" {
		files = append(files, card)
	}
	return files
}

// Size is the summed size of the files Install fetches.
func (v *Voice) Size() int64 {
	var n int64
	for _, p := range v.installFiles() {
		n += v.Files[p].SizeBytes
	}
	return n
}

// Speakers is the voice's speaker count, at least 1.
func (v *Voice) Speakers() int { return max(v.NumSpeakers, 1) }

// Voices returns the catalog's voices sorted by key.
func (c *Catalog) Voices() []*Voice {
	out := make([]*Voice, 0, len(c.voices))
	for _, k := range slices.Sorted(maps.Keys(c.voices)) {
		out = append(out, c.voices[k])
	}
	return out
}

// Voice returns the voice with this key.
func (c *Catalog) Voice(key string) (*Voice, bool) {
	v, ok := c.voices[key]
	return v, ok
}

// Len is the number of voices.
func (c *Catalog) Len() int { return len(c.voices) }

var (
	keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	md5Pattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ValidKey reports whether s can name a voice directory: letters, digits,
// '.', '_' and '-', not starting with '.', at most MaxKeyLen bytes.
func ValidKey(s string) bool {
	return len(s) <= MaxKeyLen && keyPattern.MatchString(s)
}

// Parse decodes a catalog in the voices.json format: one JSON object
// whose members are voices by key. An entry that cannot be installed (an
// unsafe key or file path, no KEY.onnx or KEY.onnx.json, a malformed
// digest, a field of the wrong type) is left out and named in Skipped; a
// document that is not such an object, or whose every entry is left out,
// is ErrBadCatalog. The size of data is the caller's to bound
// (Options.MaxCatalogBytes).
func Parse(data []byte) (*Catalog, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrBadCatalog)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object (is the catalog URL a voices.json?)", ErrBadCatalog)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCatalog, err)
	}
	if len(raw) > MaxVoices {
		return nil, fmt.Errorf("%w: %d voices, limit %d", ErrBadCatalog, len(raw), MaxVoices)
	}
	c := &Catalog{voices: make(map[string]*Voice, len(raw)), aliases: map[string]string{}}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		v, err := parseVoice(key, raw[key])
		if err != nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%.80q: %v", key, err))
			continue
		}
		c.voices[key] = v
	}
	if len(c.voices) == 0 {
		if len(raw) == 0 {
			return nil, fmt.Errorf("%w: no voices", ErrBadCatalog)
		}
		return nil, fmt.Errorf("%w: none of its %d entries can be installed (first: %s)", ErrBadCatalog, len(raw), c.Skipped[0])
	}
	// An alias never hides a key; of two voices claiming one alias, the
	// first key wins (sorted, so the choice does not depend on the map).
	for _, key := range slices.Sorted(maps.Keys(c.voices)) {
		for _, a := range c.voices[key].Aliases {
			if _, isKey := c.voices[a]; isKey {
				continue
			}
			if _, taken := c.aliases[a]; !taken {
				c.aliases[a] = key
			}
		}
	}
	return c, nil
}

func parseVoice(key string, data json.RawMessage) (*Voice, error) {
	if !ValidKey(key) {
		return nil, fmt.Errorf("key is not a voice directory name (letters, digits, '.', '_', '-', at most %d)", MaxKeyLen)
	}
	var v Voice
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	switch {
	case v.Key == "":
		v.Key = key
	case v.Key != key:
		return nil, fmt.Errorf("key field %.80q differs from the entry's key", v.Key)
	}
	if v.NumSpeakers < 0 || v.NumSpeakers > MaxSpeakers || len(v.SpeakerIDMap) > MaxSpeakers {
		return nil, fmt.Errorf("num_speakers %d or speaker_id_map of %d out of range 0..%d", v.NumSpeakers, len(v.SpeakerIDMap), MaxSpeakers)
	}
	if len(v.Files) > MaxFilesPerVoice {
		return nil, fmt.Errorf("%d files, at most %d", len(v.Files), MaxFilesPerVoice)
	}
	for p, f := range v.Files {
		if !safePath(p) {
			return nil, fmt.Errorf("file path %.80q is not a plain relative path", p)
		}
		if f.SizeBytes <= 0 {
			return nil, fmt.Errorf("file %s: size_bytes %d", p, f.SizeBytes)
		}
		if !md5Pattern.MatchString(f.MD5) {
			return nil, fmt.Errorf("file %s: md5_digest %.40q is not 32 lowercase hex digits", p, f.MD5)
		}
	}
	if v.ModelPath() == "" || v.ConfigPath() == "" {
		return nil, fmt.Errorf("files lack %s.onnx or %s.onnx.json", key, key)
	}
	aliases := v.Aliases[:0:0]
	for _, a := range v.Aliases {
		if ValidKey(a) && a != key {
			aliases = append(aliases, a)
		}
	}
	v.Aliases = aliases
	return &v, nil
}

// safePath reports whether p is a clean relative slash-separated path
// that stays inside the collection: no "..", no leading "/", no
// backslashes or control characters.
func safePath(p string) bool {
	if p == "" || len(p) > 512 || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return false
		}
	}
	return !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' || r == utf8.RuneError })
}
