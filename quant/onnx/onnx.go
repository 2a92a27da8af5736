// Package onnx reads, checks, writes and builds ONNX model files in Go.
//
// Every model mynah hands to ONNX Runtime passes through Decode first: a
// truncated, foreign or hostile file must be a clear error here, because the
// same file can crash ONNX Runtime inside cgo. The graph builder (Graph) is
// how the project makes its own models: the demo voice, test models, and the
// rewrites of the quantization passes.
package onnx

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Errors returned by this package. Callers test them with errors.Is; the
// wrapped message says what exactly was wrong.
var (
	// ErrInvalidModel means the bytes are not a usable ONNX model: empty,
	// truncated, not protobuf, or a protobuf that is not a model.
	ErrInvalidModel = errors.New("invalid onnx model")
	// ErrTooLarge means a file or a count exceeded one of ReadOptions' limits.
	ErrTooLarge = errors.New("onnx model exceeds limit")
	// ErrGraph means the graph itself is inconsistent: a name defined twice,
	// a value used before it is produced, a missing output.
	ErrGraph = errors.New("invalid onnx graph")
)

// Default limits. They are far above any voice mynah runs on a small device
// and far below what would exhaust its memory.
const (
	DefaultMaxBytes      = 2 << 30 // 2 GiB, protobuf's own ceiling
	DefaultMaxNodes      = 1 << 20
	DefaultMaxGraphDepth = 16
)

// Supported IR versions: 3 is the oldest ONNX Runtime still loads, 11 is
// the newest the pinned runtime (1.30) reads.
const (
	MinIRVersion = 3
	MaxIRVersion = 11
)

// ReadOptions bound what Decode and ReadFile accept. A nil *ReadOptions means
// the defaults.
type ReadOptions struct {
	MaxBytes      int64 // file size limit; 0 means DefaultMaxBytes
	MaxNodes      int   // nodes in all graphs together; 0 means DefaultMaxNodes
	MaxGraphDepth int   // subgraph nesting; 0 means DefaultMaxGraphDepth
	// Dir is the directory external tensor data must live in. Empty means
	// external data is refused.
	Dir string
}

func (o *ReadOptions) withDefaults() ReadOptions {
	var r ReadOptions
	if o != nil {
		r = *o
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = DefaultMaxBytes
	}
	if r.MaxNodes <= 0 {
		r.MaxNodes = DefaultMaxNodes
	}
	if r.MaxGraphDepth <= 0 {
		r.MaxGraphDepth = DefaultMaxGraphDepth
	}
	return r
}

// Model is a decoded and checked ONNX model.
type Model struct {
	Proto *onnxpb.ModelProto
	// Digest is the hex sha256 of the bytes the model was decoded from (or
	// encoded to, for built models). Caches key on it, so replacing or
	// re-quantizing a model invalidates what was computed with the old one.
	Digest string
	// Size is the length of those bytes.
	Size int64
}

// Graph returns the main graph.
func (m *Model) Graph() *onnxpb.GraphProto { return m.Proto.GetGraph() }

// Opset returns the imported version of domain ("" or "ai.onnx" for the
// default domain), or 0 when it is not imported.
func (m *Model) Opset(domain string) int64 {
	for _, o := range m.Proto.GetOpsetImport() {
		if o.GetDomain() == domain || (isDefaultDomain(domain) && isDefaultDomain(o.GetDomain())) {
			return o.GetVersion()
		}
	}
	return 0
}

// Metadata returns the model's metadata_props as a map.
func (m *Model) Metadata() map[string]string {
	md := make(map[string]string, len(m.Proto.GetMetadataProps()))
	for _, p := range m.Proto.GetMetadataProps() {
		md[p.GetKey()] = p.GetValue()
	}
	return md
}

// Decode parses data as an ONNX model and checks it (see Check).
func Decode(data []byte, opts *ReadOptions) (*Model, error) {
	o := opts.withDefaults()
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: file is empty", ErrInvalidModel)
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), o.MaxBytes)
	}
	var mp onnxpb.ModelProto
	// A recursion limit well under protobuf's default keeps a hostile file
	// of nested messages from costing deep stacks.
	uo := proto.UnmarshalOptions{RecursionLimit: 200}
	if err := uo.Unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("%w: not an onnx protobuf (truncated or another format): %v", ErrInvalidModel, err)
	}
	sum := sha256.Sum256(data)
	m := &Model{Proto: &mp, Digest: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	if err := Check(m, &o); err != nil {
		return nil, err
	}
	return m, nil
}

// ReadFile reads, decodes and checks the model at path. External data, if
// any, must live in the model's directory.
func ReadFile(path string, opts *ReadOptions) (*Model, error) {
	m, _, err := ReadFileData(path, opts)
	return m, err
}

// ReadFileData is ReadFile that also returns the file's bytes, so a caller
// can hand ONNX Runtime exactly what was checked without reading it twice.
func ReadFileData(path string, opts *ReadOptions) (*Model, []byte, error) {
	o := opts.withDefaults()
	if o.Dir == "" {
		o.Dir = filepath.Dir(path)
	}
	f, size, err := OpenFile(path, o.MaxBytes)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data := make([]byte, size)
	if _, err := readFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("read model %s: %w", path, err)
	}
	m, err := Decode(data, &o)
	if err != nil {
		return nil, nil, fmt.Errorf("read model %s: %w", path, err)
	}
	return m, data, nil
}

// OpenFile opens a model file for reading: a regular file of at most
// maxBytes (0: DefaultMaxBytes), with its size. Errors name the file and
// wrap ErrInvalidModel or ErrTooLarge. The caller closes it.
func OpenFile(path string, maxBytes int64) (*os.File, int64, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read model: %w", err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("read model: %w", err)
	case !st.Mode().IsRegular():
		err = fmt.Errorf("read model %s: %w: not a regular file", path, ErrInvalidModel)
	case st.Size() > maxBytes:
		err = fmt.Errorf("read model %s: %w: %d bytes, limit %d", path, ErrTooLarge, st.Size(), maxBytes)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Encode serializes the model deterministically (same model, same bytes)
// and updates its Digest and Size.
func Encode(m *Model) ([]byte, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Proto)
	if err != nil {
		return nil, fmt.Errorf("encode model: %w", err)
	}
	sum := sha256.Sum256(data)
	m.Digest = hex.EncodeToString(sum[:])
	m.Size = int64(len(data))
	return data, nil
}

// WriteFile encodes m and writes it to path atomically (temp file + rename),
// so a crash never leaves a half-written model where a voice expects one.
func WriteFile(path string, m *Model) error {
	data, err := Encode(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write model %s: %w", path, err)
	}
	return nil
}

func isDefaultDomain(d string) bool { return d == "" || d == "ai.onnx" }
