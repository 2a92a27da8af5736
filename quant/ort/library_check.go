package ort

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// checkLibrary looks at a library file in Go before dlopen sees it. dlopen
// trusts the file: a truncated download kills the process with SIGBUS inside
// the loader, and any other library gets its constructors run. Reading the
// ELF headers (well under a millisecond for ONNX Runtime's 45 MB) turns
// both into errors that say what is wrong.
func checkLibrary(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkLibraryELF(f, fi.Size())
}

// elfMachines maps GOARCH to the ELF machine a library for it must have.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"riscv64": elf.EM_RISCV,
}

// checkLibraryELF checks that r (size bytes) is a complete ELF shared
// library for this machine that defines OrtGetApiBase, ONNX Runtime's one
// entry point.
func checkLibraryELF(r io.ReaderAt, size int64) error {
	f, err := elf.NewFile(r)
	if err != nil {
		magic := make([]byte, 4)
		if _, merr := r.ReadAt(magic, 0); merr == nil && string(magic) == elf.ELFMAG &&
			(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return fmt.Errorf("file truncated: its ELF headers point past the end of its %d bytes (download it again)", size)
		}
		return fmt.Errorf("not an ELF shared library (%v)", err)
	}
	if f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF file of type %s, not a shared library", f.Type)
	}
	if want, ok := elfMachines[runtime.GOARCH]; ok && f.Machine != want {
		return fmt.Errorf("library built for %s, this machine needs %s", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if p.Off > uint64(size) || p.Filesz > uint64(size)-p.Off {
			return fmt.Errorf("file truncated: a segment ends at byte %d but the file has %d bytes (download it again)",
				p.Off+p.Filesz, size)
		}
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("no dynamic symbol table (%v)", err)
	}
	for _, s := range syms {
		if s.Name == "OrtGetApiBase" && s.Section != elf.SHN_UNDEF {
			return nil
		}
	}
	return fmt.Errorf("a shared library, but not ONNX Runtime (no OrtGetApiBase)")
}
