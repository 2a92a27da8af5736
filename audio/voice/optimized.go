package voice

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/cpu"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The optimized-model cache (PiperOptions.OptimizedDir). Building a
// session is mostly ONNX Runtime optimizing the graph: fusing nodes and,
// at level "all" on x86, reordering every convolution's weights for its
// blocked kernels, copying them several times over. The result depends
// only on the model file, the ONNX Runtime release, the CPU's instruction
// set and the few options that change the graph, so it is done once:
// the first load has ONNX Runtime write the optimized model in its own
// format (ort.SessionOptions.SaveOptimized), and later loads hand that
// file to ONNX Runtime, which uses its weights in place
// (ort.Runtime.NewSessionORT). BenchmarkLoadPiper has the figures.
//
// An entry is two files named by its key: KEY.ort, the model, and
// KEY.json, what the key stands for (the source file's path, size and
// modification time, its sha256 for the voice's identity) and the .ort
// file's size and CRC-32C, checked before ONNX Runtime sees the file (the
// files are mynah's own, so what is guarded against is damage, not an
// adversary; CRC-32C runs at memory speed where sha256 took as long as
// the rest of the load). A
// missing, damaged or unusable entry is rebuilt from the model file; an
// entry whose source file changed is never found again (its key differs)
// and is removed when the new one is stored.

// optimizedFormat changes whenever the entry's layout or meaning does.
const optimizedFormat = "1"

// maxOptimizedMeta bounds the sidecar read.
const maxOptimizedMeta = 64 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// optimizedMeta is an entry's KEY.json.
type optimizedMeta struct {
	Format       string           `json:"format"`
	Source       string           `json:"source"`
	SourceSize   int64            `json:"source_size"`
	SourceMtime  int64            `json:"source_mtime_ns"`
	SourceSHA256 string           `json:"source_sha256"`
	ORTSize      int64            `json:"ort_size"`
	ORTCRC32C    uint32           `json:"ort_crc32c"`
	Inputs       []ort.TensorInfo `json:"inputs"`
	Outputs      []ort.TensorInfo `json:"outputs"`
}

// optimizedCache is one directory of entries.
type optimizedCache struct {
	dir string
	log *slog.Logger
}

// optimizedKey names the entry for the model file at path (already
// stat'ed) under the runtime and options that shape the optimized graph;
// "" when the options cannot be cached (a GPU provider: its graph is
// partitioned for the device).
func optimizedKey(rt *ort.Runtime, path string, st os.FileInfo, so *ort.SessionOptions, keep1D bool) string {
	var o ort.SessionOptions
	if so != nil {
		o = *so
	}
	if o.Provider != "" && o.Provider != ort.ProviderAuto && o.Provider != ort.ProviderCPU {
		return ""
	}
	var ino, dev uint64
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		ino, dev = uint64(s.Ino), uint64(s.Dev)
	}
	h := sha256.New()
	for _, part := range []string{
		optimizedFormat, path, strconv.FormatInt(st.Size(), 10), strconv.FormatInt(st.ModTime().UnixNano(), 10),
		strconv.FormatUint(ino, 10), strconv.FormatUint(dev, 10),
		rt.Version(), rt.LibraryPath(), cpuSignature(),
		o.GraphOptimization.String(), strconv.FormatBool(keep1D), string(o.Provider),
	} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cpuSignature names what of the CPU ONNX Runtime's optimizer looks at
// (the instruction sets its kernels and weight layouts are chosen by).
func cpuSignature() string {
	flags := []string{runtime.GOARCH}
	add := func(name string, has bool) {
		if has {
			flags = append(flags, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add("avx", cpu.X86.HasAVX)
		add("avx2", cpu.X86.HasAVX2)
		add("fma", cpu.X86.HasFMA)
		add("avx512f", cpu.X86.HasAVX512F)
		add("avx512bw", cpu.X86.HasAVX512BW)
		add("avx512vnni", cpu.X86.HasAVX512VNNI)
		add("avxvnni", cpu.X86.HasAVXVNNI)
	case "arm64":
		add("asimd", cpu.ARM64.HasASIMD)
		add("asimddp", cpu.ARM64.HasASIMDDP)
		add("i8mm", cpu.ARM64.HasI8MM)
		add("sve", cpu.ARM64.HasSVE)
		add("fphp", cpu.ARM64.HasFPHP)
	}
	return strings.Join(flags, ",")
}

// open loads the entry key as a session, or reports why not (the caller
// rebuilds it then). A damaged entry is removed.
func (c *optimizedCache) open(rt *ort.Runtime, key string, path string, st os.FileInfo, so *ort.SessionOptions) (*ort.Session, *onnx.Model, error) {
	base := filepath.Join(c.dir, key)
	meta, err := readOptimizedMeta(base + ".json")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	if err == nil && (meta.Source != path || meta.SourceSize != st.Size() || meta.SourceMtime != st.ModTime().UnixNano()) {
		err = errors.New("it was made from another file")
	}
	if err != nil {
		c.remove(base)
		return nil, nil, err
	}
	data, free, err := readModel(base + ".ort")
	if err != nil {
		c.remove(base)
		return nil, nil, err
	}
	if sum := crc32.Checksum(data, castagnoli); int64(len(data)) != meta.ORTSize || sum != meta.ORTCRC32C {
		free()
		c.remove(base)
		return nil, nil, fmt.Errorf("%s.ort: %d bytes, CRC-32C %08x; it was written as %d bytes, CRC-32C %08x",
			key, len(data), sum, meta.ORTSize, meta.ORTCRC32C)
	}
	sess, err := rt.NewSessionORT(data, meta.Inputs, meta.Outputs, free, so)
	if err != nil {
		free()
		c.remove(base)
		return nil, nil, err
	}
	return sess, &onnx.Model{Digest: meta.SourceSHA256, Size: meta.SourceSize}, nil
}

func readOptimizedMeta(path string) (optimizedMeta, error) {
	var m optimizedMeta
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOptimizedMeta+1))
	if err != nil {
		return m, err
	}
	if len(data) > maxOptimizedMeta {
		return m, fmt.Errorf("%s: over %d bytes", path, maxOptimizedMeta)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.Format != optimizedFormat || m.ORTSize <= 0 || len(m.Inputs) == 0 || len(m.Outputs) == 0 {
		return m, fmt.Errorf("%s: not an entry of format %s", path, optimizedFormat)
	}
	return m, nil
}

// tempPath is where ONNX Runtime writes a new entry's model.
func (c *optimizedCache) tempPath(key string) (string, error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(c.dir, key+".*.tmp")
	if err != nil {
		return "", err
	}
	name := f.Name()
	f.Close()
	return name, nil
}

// store makes the model ONNX Runtime wrote at tmp the entry key, and
// removes the entries made from earlier versions of the same file.
func (c *optimizedCache) store(key, tmp string, meta optimizedMeta) error {
	defer os.Remove(tmp) // gone once renamed
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("ONNX Runtime wrote no optimized model")
	}
	meta.Format, meta.ORTSize, meta.ORTCRC32C = optimizedFormat, n, h.Sum32()
	js, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	c.removeOthers(meta.Source, key)
	base := filepath.Join(c.dir, key)
	if err := os.Rename(tmp, base+".ort"); err != nil {
		return err
	}
	// The sidecar last: an entry is only found once both are complete.
	jsTmp := base + ".json.tmp"
	if err := os.WriteFile(jsTmp, js, 0o644); err != nil {
		return err
	}
	return os.Rename(jsTmp, base+".json")
}

// removeOthers removes the entries made from source other than key.
func (c *optimizedCache) removeOthers(source, key string) {
	sidecars, _ := filepath.Glob(filepath.Join(c.dir, "*.json"))
	for _, p := range sidecars {
		base := strings.TrimSuffix(p, ".json")
		if filepath.Base(base) == key {
			continue
		}
		if m, err := readOptimizedMeta(p); err == nil && m.Source == source {
			c.remove(base)
		}
	}
}

func (c *optimizedCache) remove(base string) {
	os.Remove(base + ".json")
	os.Remove(base + ".ort")
}
