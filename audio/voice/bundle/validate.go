package bundle

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Validate checks everything Parse checks after decoding: the engine and
// its roles, every role's file and tensor keys, paths, digests and number
// ranges. It rewrites each path in its clean form ("./a//b.onnx" becomes
// "a/b.onnx"). Errors wrap ErrInvalidManifest and name the field.
func (m *Manifest) Validate() error {
	if m.Format != FormatVersion {
		return invalid("format", "%d is not supported (this mynah reads format %d)", m.Format, FormatVersion)
	}
	roles, ok := engineRoles[m.Engine]
	if !ok {
		return invalid("engine", "%q is not one of %q, %q, %q", clip(m.Engine), EnginePiper, EnginePipeline, EngineStyleVector)
	}
	if err := checkName("name", m.Name); err != nil {
		return err
	}
	if m.SampleRate < MinSampleRate || m.SampleRate > MaxSampleRate {
		return invalid("sample_rate", "%d Hz is missing or outside %d..%d", m.SampleRate, MinSampleRate, MaxSampleRate)
	}
	if err := m.Text.validate(m.Engine); err != nil {
		return err
	}
	if err := m.checkFiles(); err != nil {
		return err
	}
	// Every role of the engine present, nothing of another engine.
	used := make(map[string]string) // file key → role
	for _, role := range allRoles {
		t := m.tensors(role)
		if !slices.Contains(roles, role) {
			if t != nil {
				return invalid(role, "engine %s has no role %s (its roles: %s)", m.Engine, role, strings.Join(roles, ", "))
			}
			continue
		}
		if t == nil {
			return invalid(role, "missing (engine %s needs roles %s)", m.Engine, strings.Join(roles, ", "))
		}
		if err := m.checkRole(role, t); err != nil {
			return err
		}
		if other, dup := used[t.File]; dup {
			return invalid(role+".file", "%q is already the file of role %s", t.File, other)
		}
		used[t.File] = role
	}
	for _, key := range sortedKeys(m.Files) {
		if _, ok := used[key]; !ok {
			return invalid("files."+key, "no role uses it (a typo in a role's \"file\"?)")
		}
	}
	if m.Encoder != nil {
		if err := m.Encoder.validate(); err != nil {
			return err
		}
	}
	if m.Decoder != nil {
		if err := m.Decoder.validate(); err != nil {
			return err
		}
	}
	if err := m.checkVariants(); err != nil {
		return err
	}
	return m.checkStyle()
}

var allRoles = []string{RoleModel, RoleEncoder, RoleDecoder, RoleVocoder}

var engineRoles = map[string][]string{
	EnginePiper:       {RoleModel},
	EnginePipeline:    {RoleEncoder, RoleDecoder, RoleVocoder},
	EngineStyleVector: {RoleModel},
}

// Role returns the tensors of role, or nil when the manifest has no such
// role.
func (m *Manifest) Role(role string) *Tensors { return m.tensors(role) }

func (m *Manifest) tensors(role string) *Tensors {
	switch role {
	case RoleModel:
		if m.Model != nil {
			return &m.Model.Tensors
		}
	case RoleEncoder:
		if m.Encoder != nil {
			return &m.Encoder.Tensors
		}
	case RoleDecoder:
		if m.Decoder != nil {
			return &m.Decoder.Tensors
		}
	case RoleVocoder:
		if m.Vocoder != nil {
			return &m.Vocoder.Tensors
		}
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidManifest, field, fmt.Sprintf(format, args...))
}

// clip shortens a value quoted in an error so that a hostile manifest
// cannot make a log line of a megabyte.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

// checkName allows names that are safe as file names, log values and MQTT
// payload values: letters, digits, '.', '_' and '-', not starting with '.'.
func checkName(field, s string) error {
	if s == "" {
		return invalid(field, "missing")
	}
	if len(s) > MaxNameBytes {
		return invalid(field, "%d bytes, over MaxNameBytes (%d)", len(s), MaxNameBytes)
	}
	if s[0] == '.' {
		return invalid(field, "%q starts with '.'", s)
	}
	for _, r := range s {
		if !isNameRune(r) {
			return invalid(field, "%q has %q (allowed: letters, digits, '.', '_', '-')", clip(s), r)
		}
	}
	return nil
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

func (t *Text) validate(engine string) error {
	switch t.Phonemes {
	case PhonemesEspeak:
		if t.Language == "" {
			return invalid("text.language", "missing (the espeak-ng voice, e.g. \"en-us\")")
		}
	case PhonemesText, PhonemesPinyin:
	default:
		return invalid("text.phonemes", "%q is not one of %q, %q, %q", clip(t.Phonemes), PhonemesEspeak, PhonemesText, PhonemesPinyin)
	}
	if len(t.Language) > 40 || strings.IndexFunc(t.Language, func(r rune) bool {
		return !(isNameRune(r) || r == '+') || r == '.'
	}) >= 0 {
		return invalid("text.language", "%q is not an espeak-ng voice name (letters, digits, '-', '_', '+'; at most 40 bytes)", clip(t.Language))
	}
	if len(t.PhonemeIDMap) == 0 {
		return invalid("text.phoneme_id_map", "missing or empty")
	}
	if len(t.PhonemeIDMap) > MaxSymbols {
		return invalid("text.phoneme_id_map", "%d symbols, over MaxSymbols (%d)", len(t.PhonemeIDMap), MaxSymbols)
	}
	if engine != EngineStyleVector {
		for _, sym := range []string{"^", "_", "$"} {
			if len(t.PhonemeIDMap[sym]) == 0 {
				return invalid("text.phoneme_id_map", "no id for %q (Piper's start, pad and end symbols are required)", sym)
			}
		}
	}
	for _, sym := range sortedKeys(t.PhonemeIDMap) {
		ids := t.PhonemeIDMap[sym]
		switch {
		case sym == "":
			return invalid("text.phoneme_id_map", "empty symbol")
		case len(sym) > 32:
			return invalid("text.phoneme_id_map", "symbol %q is over 32 bytes", clip(sym))
		case len(ids) == 0:
			return invalid("text.phoneme_id_map", "%q has no ids", sym)
		case len(ids) > MaxIDsPerSymbol:
			return invalid("text.phoneme_id_map", "%q has %d ids, over MaxIDsPerSymbol (%d)", sym, len(ids), MaxIDsPerSymbol)
		}
		for _, id := range ids {
			if id < 0 || id >= MaxTokenID {
				return invalid("text.phoneme_id_map", "%q maps to %d, outside 0..MaxTokenID-1 (%d)", sym, id, MaxTokenID-1)
			}
		}
	}
	return nil
}

func (m *Manifest) checkFiles() error {
	if len(m.Files) == 0 {
		return invalid("files", "missing or empty")
	}
	if len(m.Files) > MaxFiles {
		return invalid("files", "%d entries, over MaxFiles (%d)", len(m.Files), MaxFiles)
	}
	for _, key := range sortedKeys(m.Files) {
		if err := checkName("files key", key); err != nil {
			return err
		}
		ref := m.Files[key]
		if err := ref.validate("files." + key); err != nil {
			return err
		}
		m.Files[key] = ref
	}
	return nil
}

// validate checks and cleans r.
func (r *FileRef) validate(field string) error {
	clean, err := cleanPath(r.Path)
	if err != nil {
		return invalid(field+".path", "%v", err)
	}
	r.Path = clean
	if !isSHA256(r.SHA256) {
		return invalid(field+".sha256", "%q is not 64 lowercase hex digits", clip(r.SHA256))
	}
	if r.Size < 0 || r.Size > MaxFileBytes {
		return invalid(field+".size", "%d is outside 0..MaxFileBytes (%d)", r.Size, int64(MaxFileBytes))
	}
	return nil
}

// cleanPath accepts a slash-separated path inside the bundle and returns
// its clean form. ".." is refused as an element even where it would stay
// inside ("a/../b"): a manifest has no reason to write one.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("missing")
	case len(p) > MaxPathBytes:
		return "", fmt.Errorf("%d bytes, over MaxPathBytes (%d)", len(p), MaxPathBytes)
	case strings.ContainsAny(p, "\x00\\"):
		return "", fmt.Errorf("%q has a NUL or a backslash (use '/')", clip(p))
	case path.IsAbs(p):
		return "", fmt.Errorf("%q is absolute; paths are relative to the bundle directory", clip(p))
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("%q has a \"..\" element; files must be inside the bundle directory", clip(p))
		}
	}
	clean := path.Clean(p)
	if clean == "." || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", fmt.Errorf("%q does not name a file inside the bundle directory", clip(p))
	}
	return clean, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkRole checks a role's file reference and that its tensor keys are
// exactly those its spec knows, with every required one present.
func (m *Manifest) checkRole(role string, t *Tensors) error {
	if t.File == "" {
		return invalid(role+".file", "missing (a key of \"files\")")
	}
	if _, ok := m.Files[t.File]; !ok {
		return invalid(role+".file", "%q is not a key of \"files\" (keys: %s)", clip(t.File), strings.Join(sortedKeys(m.Files), ", "))
	}
	spec := specFor(m.Engine, role)
	for _, side := range []struct {
		name  string
		have  map[string]string
		specs []tensorSpec
	}{{"inputs", t.Inputs, spec.inputs}, {"outputs", t.Outputs, spec.outputs}} {
		for _, key := range sortedKeys(side.have) {
			field := role + "." + side.name + "." + key
			if specByKey(side.specs, key) == nil {
				return invalid(role+"."+side.name, "unknown key %q (known: %s)", clip(key), specKeys(side.specs))
			}
			if err := checkTensorName(field, side.have[key]); err != nil {
				return err
			}
		}
		for _, s := range side.specs {
			if !s.optional && side.have[s.key] == "" {
				return invalid(role+"."+side.name+"."+s.key, "missing (the model's tensor name for %s)", s.what)
			}
		}
	}
	return nil
}

func checkTensorName(field, name string) error {
	switch {
	case name == "":
		return invalid(field, "empty tensor name")
	case len(name) > MaxTensorNameBytes:
		return invalid(field, "%d bytes, over MaxTensorNameBytes (%d)", len(name), MaxTensorNameBytes)
	case strings.ContainsRune(name, 0):
		return invalid(field, "tensor name has a NUL byte")
	}
	return nil
}

func (e *EncoderRole) validate() error {
	if e.SampleRate < MinSampleRate || e.SampleRate > MaxSampleRate {
		return invalid("encoder.sample_rate", "%d Hz is missing or outside %d..%d", e.SampleRate, MinSampleRate, MaxSampleRate)
	}
	if bad(e.MaxSeconds) || e.MaxSeconds <= 0 || e.MaxSeconds > MaxEncoderSeconds {
		return invalid("encoder.max_seconds", "%v is missing or outside (0, MaxEncoderSeconds (%d)]", e.MaxSeconds, MaxEncoderSeconds)
	}
	if bad(e.MinSeconds) || e.MinSeconds <= 0 || e.MinSeconds > e.MaxSeconds {
		return invalid("encoder.min_seconds", "%v is missing or outside (0, max_seconds (%v)]", e.MinSeconds, e.MaxSeconds)
	}
	return nil
}

func bad(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

func (d *DecoderRole) validate() error {
	if d.MaxSteps < 1 || d.MaxSteps > MaxDecoderSteps {
		return invalid("decoder.max_steps", "%d is missing or outside 1..MaxDecoderSteps (%d)", d.MaxSteps, MaxDecoderSteps)
	}
	kv := d.KV
	if kv.Layout != KVLayoutPerLayer {
		return invalid("decoder.kv.layout", "%q is not supported (format %d knows %q)", clip(kv.Layout), FormatVersion, KVLayoutPerLayer)
	}
	for _, f := range []struct {
		field   string
		v, most int
		limit   string
	}{
		{"layers", kv.Layers, MaxKVLayers, "MaxKVLayers"},
		{"heads", kv.Heads, MaxKVHeads, "MaxKVHeads"},
		{"head_dim", kv.HeadDim, MaxKVHeadDim, "MaxKVHeadDim"},
		{"max_context", kv.MaxContext, MaxKVContext, "MaxKVContext"},
	} {
		if f.v < 1 || f.v > f.most {
			return invalid("decoder.kv."+f.field, "%d is missing or outside 1..%s (%d)", f.v, f.limit, f.most)
		}
	}
	names := make(map[string]string)
	for _, p := range []struct{ field, pattern string }{
		{"past_key", kv.PastKey}, {"past_value", kv.PastValue},
		{"present_key", kv.PresentKey}, {"present_value", kv.PresentValue},
	} {
		field := "decoder.kv." + p.field
		if err := checkTensorName(field, p.pattern); err != nil {
			return err
		}
		if !strings.Contains(p.pattern, "{i}") {
			return invalid(field, "%q has no \"{i}\" for the layer number", clip(p.pattern))
		}
		if other, dup := names[p.pattern]; dup {
			return invalid(field, "%q is also %s", clip(p.pattern), other)
		}
		names[p.pattern] = field
	}
	// A KV name that is also a named input or output would be fed twice.
	for _, side := range []map[string]string{d.Inputs, d.Outputs} {
		for _, key := range sortedKeys(side) {
			for i := range kv.Layers {
				for _, n := range kv.Names(i) {
					if n == side[key] {
						return invalid("decoder.kv", "layer %d's %q is also the tensor of %s", i, n, key)
					}
				}
			}
		}
	}
	return nil
}

// Names returns layer i's tensor names: past key, past value, present
// key, present value.
func (kv *KV) Names(i int) [4]string {
	n := fmt.Sprint(i)
	r := func(p string) string { return strings.ReplaceAll(p, "{i}", n) }
	return [4]string{r(kv.PastKey), r(kv.PastValue), r(kv.PresentKey), r(kv.PresentValue)}
}

func (m *Manifest) checkStyle() error {
	if m.Engine != EngineStyleVector {
		switch {
		case m.Style != nil:
			return invalid("style", "only engine %s has a style table", EngineStyleVector)
		case m.Voices != nil:
			return invalid("voices", "only engine %s has a voice pack", EngineStyleVector)
		}
		return nil
	}
	s := m.Style
	switch {
	case s == nil:
		return invalid("style", "missing (engine %s needs dim, rows and row_rule)", EngineStyleVector)
	case s.Dim < 1 || s.Dim > MaxStyleDim:
		return invalid("style.dim", "%d is missing or outside 1..MaxStyleDim (%d)", s.Dim, MaxStyleDim)
	case s.Rows < 1 || s.Rows > MaxStyleRows:
		return invalid("style.rows", "%d is missing or outside 1..MaxStyleRows (%d)", s.Rows, MaxStyleRows)
	case s.RowRule != RowRuleTokens && s.RowRule != RowRuleTokensMinusOne:
		return invalid("style.row_rule", "%q is not %q or %q", clip(s.RowRule), RowRuleTokens, RowRuleTokensMinusOne)
	case len(m.Voices) == 0:
		return invalid("voices", "missing or empty (engine %s needs at least one voice)", EngineStyleVector)
	case len(m.Voices) > MaxVoices:
		return invalid("voices", "%d entries, over MaxVoices (%d)", len(m.Voices), MaxVoices)
	}
	for _, name := range sortedKeys(m.Voices) {
		if err := checkName("voices key", name); err != nil {
			return err
		}
		ref := m.Voices[name]
		if err := ref.validate("voices." + name); err != nil {
			return err
		}
		if ref.Size != 0 && ref.Size != s.VoiceBytes() {
			return invalid("voices."+name+".size", "%d bytes, but style rows × dim × 4 is %d", ref.Size, s.VoiceBytes())
		}
		m.Voices[name] = ref
	}
	return nil
}
