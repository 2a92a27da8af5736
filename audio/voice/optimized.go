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
	"time"

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
// modification time, its sha256 for the voice's identity), the .ort
// file's size and CRC-32C, checked before ONNX Runtime sees the file, and
// a CRC-32C of the sidecar's own values (the files are mynah's own, so
// what is guarded against is damage, not an adversary; CRC-32C runs at
// memory speed where sha256 took as long as the rest of the load; a
// damaged sidecar that still parses would otherwise hand ONNX Runtime
// wrong inputs, or the voice a wrong digest, with nothing to rebuild it).
// A missing, damaged or unusable entry is rebuilt from the model file; an
// entry whose source file changed, or that an earlier ONNX Runtime or
// CPU made, is never found again (its key differs) and is removed when
// the next one of the same file is stored. Entries of the same file under
// other options (KeepConv1D, KeepLeakyRelu, the optimization level) are kept: a
// directory shared by differently set up processes would otherwise
// rebuild on every load. Such processes (mynahd and `mynah say`) take the
// directory's flock: shared to open an entry, exclusive to store one.

// optimizedFormat changes whenever the entry's layout or meaning does.
// "3": gathers of constant tables and linear upsampling rewritten
// (onnx.GatherTableRows, onnx.ResizeLinearMatMul), LeakyRelus kept
// blocked (onnx.BlockLeakyRelu), KeepLeakyRelu in the key.
const optimizedFormat = "3"

// maxOptimizedMeta bounds the sidecar read.
const maxOptimizedMeta = 64 << 10

// staleOptimized is how old a file of an entry being written (a temp
// file, a model without its sidecar) must be before a store takes it
// for the leftover of a process that died: no load takes this long.
const staleOptimized = time.Hour

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// optimizedMeta is an entry's KEY.json.
type optimizedMeta struct {
	Format       string `json:"format"`
	Source       string `json:"source"`
	SourceSize   int64  `json:"source_size"`
	SourceMtime  int64  `json:"source_mtime_ns"`
	SourceSHA256 string `json:"source_sha256"`
	// MadeFor names the version of the source file and the runtime the
	// entry was made from and for (optimizedKeys); entries of the same
	// source made for another are outdated.
	MadeFor   string           `json:"made_for"`
	ORTSize   int64            `json:"ort_size"`
	ORTCRC32C uint32           `json:"ort_crc32c"`
	Inputs    []ort.TensorInfo `json:"inputs"`
	Outputs   []ort.TensorInfo `json:"outputs"`
	// Check is the CRC-32C of the sidecar's JSON encoding (json.Marshal)
	// with Check zero: it covers the values, not the layout.
	Check uint32 `json:"check_crc32c"`
}

// optimizedCache is one directory of entries.
type optimizedCache struct {
	dir string
	log *slog.Logger
}

// optimizedTempHook, when set (by tests), is called with the path of
// every temp file ONNX Runtime is to write an optimized model to.
var optimizedTempHook func(path string)

// optimizedKeys names the entry for the model file at path (already
// stat'ed) under the runtime and options that shape the optimized graph
// (key), and the file's version and the runtime alone (madeFor); key is
// "" when the options cannot be cached (a GPU provider: its graph is
// partitioned for the device; or no provider at all).
func optimizedKeys(rt *ort.Runtime, path string, st os.FileInfo, so *ort.SessionOptions, rw rewrites) (key, madeFor string) {
	var o ort.SessionOptions
	if so != nil {
		o = *so
	}
	// As NewSession reads it: "" is auto, "CPU" is cpu.
	p, err := ort.ParseProvider(string(o.Provider))
	if err != nil || (p != ort.ProviderAuto && p != ort.ProviderCPU) {
		return "", ""
	}
	var ino, dev uint64
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		ino, dev = uint64(s.Ino), uint64(s.Dev)
	}
	madeFor = hashParts(optimizedFormat, path, strconv.FormatInt(st.Size(), 10), strconv.FormatInt(st.ModTime().UnixNano(), 10),
		strconv.FormatUint(ino, 10), strconv.FormatUint(dev, 10),
		rt.Version(), rt.LibraryPath(), cpuSignature())
	key = hashParts(madeFor, o.GraphOptimization.String(), strconv.FormatBool(rw.keep1D), strconv.FormatBool(rw.keepLeaky), string(p))
	return key, madeFor
}

// hashParts is the first 128 bits of the sha256 of parts, each ended by
// a NUL, in hex.
func hashParts(parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
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

// errNoEntry is open's error when the cache has no entry for the key.
var errNoEntry = errors.New("no optimized model")

// open loads the entry key as a session, or reports why not (the caller
// rebuilds it then): errNoEntry when there is none. A damaged entry is
// removed.
func (c *optimizedCache) open(rt *ort.Runtime, key, madeFor, path string, st os.FileInfo, so *ort.SessionOptions) (*ort.Session, *onnx.Model, error) {
	// Shared: no store is between its two renames while the entry is
	// read, and what is removed as damaged is what was read.
	unlock, err := c.lock(false)
	if err != nil {
		return nil, nil, errNoEntry // no directory: tempPath says why
	}
	defer unlock()
	base := filepath.Join(c.dir, key)
	meta, err := readOptimizedMeta(base + ".json")
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, nil, errNoEntry // the directory is not one: tempPath says so
	}
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Lstat(base + ".ort"); serr != nil {
			return nil, nil, errNoEntry
		}
		// The model without its sidecar: a store that did not finish.
		// Storing the new entry replaces it.
		return nil, nil, fmt.Errorf("%s.ort without its sidecar", key)
	}
	if err == nil && (meta.Source != path || meta.SourceSize != st.Size() || meta.SourceMtime != st.ModTime().UnixNano() || meta.MadeFor != madeFor) {
		err = fmt.Errorf("%s.json: it was made from another file", key)
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
	// ONNX Runtime keeps pointing into data: where newModelBuffer is on
	// the Go heap (modelbuf_other.go), the session's free keeps it alive.
	release := func() {
		free()
		runtime.KeepAlive(data)
	}
	sess, err := rt.NewSessionORT(data, meta.Inputs, meta.Outputs, release, so)
	if err != nil {
		free()
		c.remove(base)
		return nil, nil, fmt.Errorf("%s.ort: %w", key, err)
	}
	return sess, &onnx.Model{Digest: meta.SourceSHA256, Size: meta.SourceSize}, nil
}

// readOptimizedMeta reads and checks a sidecar: at most maxOptimizedMeta
// bytes of JSON, of this format, whose values are as they were written
// (Check) and make an entry: an absolute source path, a sha256 in
// lowercase hex, sizes within what readModel reads, and inputs and
// outputs that name tensors of known types.
func readOptimizedMeta(path string) (optimizedMeta, error) {
	data, err := readSidecar(path)
	if err != nil {
		return optimizedMeta{}, err
	}
	var m optimizedMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return optimizedMeta{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := m.valid(); err != nil {
		return optimizedMeta{}, fmt.Errorf("%s: not an entry of format %s: %w", path, optimizedFormat, err)
	}
	return m, nil
}

// readSidecar reads a sidecar file, a regular file of at most
// maxOptimizedMeta bytes.
func readSidecar(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxOptimizedMeta+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxOptimizedMeta {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxOptimizedMeta)
	}
	return data, nil
}

func (m optimizedMeta) valid() error {
	switch {
	case m.Format != optimizedFormat:
		return fmt.Errorf("format %q", m.Format)
	case m.Check != m.checksum():
		return fmt.Errorf("check %08x, the values sum to %08x", m.Check, m.checksum())
	case !filepath.IsAbs(m.Source) || filepath.Clean(m.Source) != m.Source:
		return fmt.Errorf("source %q is not a clean absolute path", m.Source)
	case m.SourceSize <= 0 || m.SourceSize > onnx.DefaultMaxBytes:
		return fmt.Errorf("source size %d", m.SourceSize)
	case !isSHA256Hex(m.SourceSHA256):
		return fmt.Errorf("source sha256 %q", m.SourceSHA256)
	case m.MadeFor == "":
		return errors.New("made_for missing")
	case m.ORTSize <= 0 || m.ORTSize > ort.MaxModelBytes:
		return fmt.Errorf("ort size %d", m.ORTSize)
	case len(m.Inputs) == 0 || len(m.Outputs) == 0:
		return fmt.Errorf("%d inputs, %d outputs", len(m.Inputs), len(m.Outputs))
	}
	for _, t := range append(append([]ort.TensorInfo(nil), m.Inputs...), m.Outputs...) {
		if t.Name == "" || t.Type == ort.Undefined || strings.HasPrefix(t.Type.String(), "ElementType(") {
			return fmt.Errorf("tensor %s", t)
		}
		for _, d := range t.Dims {
			if d < -1 {
				return fmt.Errorf("tensor %s: dimension %d", t, d)
			}
		}
	}
	return nil
}

// checksum is what Check must be.
func (m optimizedMeta) checksum() uint32 {
	m.Check = 0
	js, err := json.Marshal(m)
	if err != nil {
		return 0
	}
	return crc32.Checksum(js, castagnoli)
}

func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
	if optimizedTempHook != nil {
		optimizedTempHook(name)
	}
	return name, nil
}

// store makes the model ONNX Runtime wrote at tmp the entry key, and
// removes the outdated entries of the same source file.
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
	meta.Check = meta.checksum()
	if err := meta.valid(); err != nil {
		return fmt.Errorf("%s.json: %w", key, err)
	}
	js, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // CreateTemp's is 0600
		return err
	}
	// Exclusive: two loads storing the same entry at once (ONNX Runtime's
	// files of one model differ from build to build) would otherwise
	// leave one's model beside the other's sidecar.
	unlock, err := c.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	c.prune(meta.Source, meta.MadeFor, key)
	base := filepath.Join(c.dir, key)
	if err := os.Rename(tmp, base+".ort"); err != nil {
		return err
	}
	// The sidecar last: an entry is only found once both are complete,
	// should this process die between the renames.
	if err := writeRenamed(base+".json", js); err != nil {
		os.Remove(base + ".ort")
		return err
	}
	return nil
}

// writeRenamed writes data to a new temp file beside path and renames it
// to path.
func writeRenamed(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// prune removes the entries other than key made from source for another
// version of it or another runtime (or in another format), and the
// leftovers of stores that never finished: temp files, and models
// without their sidecar, older than staleOptimized.
func (c *optimizedCache) prune(source, madeFor, key string) {
	sidecars, _ := filepath.Glob(filepath.Join(c.dir, "*.json"))
	for _, p := range sidecars {
		base := strings.TrimSuffix(p, ".json")
		if filepath.Base(base) == key {
			continue
		}
		// Leniently: an entry of an earlier format is outdated too.
		var m struct {
			Format  string `json:"format"`
			Source  string `json:"source"`
			MadeFor string `json:"made_for"`
		}
		data, err := readSidecar(p)
		if err != nil || json.Unmarshal(data, &m) != nil || m.Source != source {
			continue
		}
		if m.Format != optimizedFormat || m.MadeFor != madeFor {
			c.remove(base)
		}
	}
	stale := time.Now().Add(-staleOptimized)
	for _, pattern := range []string{"*.tmp", "*.ort"} {
		files, _ := filepath.Glob(filepath.Join(c.dir, pattern))
		for _, p := range files {
			st, err := os.Lstat(p)
			if err != nil || !st.ModTime().Before(stale) {
				continue
			}
			if pattern == "*.ort" {
				if _, err := os.Lstat(strings.TrimSuffix(p, ".ort") + ".json"); !errors.Is(err, os.ErrNotExist) {
					continue
				}
			}
			os.Remove(p)
		}
	}
}

// lock takes the directory's lock (lockDir). Where the system has no
// such locks (or the file system refuses them, as NFS does an exclusive
// one on a directory) the cache goes on without: the entries' checksums
// still keep a mixed pair from being used, and the next load rebuilds it.
func (c *optimizedCache) lock(exclusive bool) (unlock func(), err error) {
	unlock, err = lockDir(c.dir, exclusive)
	switch {
	case err == nil:
		return unlock, nil
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, err
	}
	c.log.Debug("optimized-model cache unlocked", "dir", c.dir, "err", err)
	return func() {}, nil
}

func (c *optimizedCache) remove(base string) {
	os.Remove(base + ".json")
	os.Remove(base + ".ort")
}
