package ort

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// projectLib is the ONNX Runtime library the tests load: $MYNAH_ORT_LIB
// when set (scripts/cross-test.sh points it at the arm64 build), else the
// copy scripts/setup.sh put in the project's .ort/. The tests need the real
// ONNX Runtime; without it they fail and say how to get it.
func projectLib(t testing.TB) string {
	t.Helper()
	s := librarySearch{env: os.Getenv(EnvLibrary)}
	if wd, err := os.Getwd(); err == nil {
		s.cwd = wd
	}
	path, err := s.find()
	if err != nil {
		t.Fatalf("these tests need ONNX Runtime: %v", err)
	}
	return path
}

// realLibrary reads the library projectLib finds.
func realLibrary(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(projectLib(t))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckLibraryELF(t *testing.T) {
	real := realLibrary(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testBinary, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	otherMachine := bytes.Clone(real)
	machine := uint16(62) // EM_X86_64
	if binary.LittleEndian.Uint16(real[18:]) == machine {
		machine = 183 // EM_AARCH64
	}
	binary.LittleEndian.PutUint16(otherMachine[18:], machine)
	renamed := bytes.ReplaceAll(real, []byte("OrtGetApiBase"), []byte("OrtGetApiBasf"))

	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"onnx runtime", real, ""},
		{"empty", nil, "not an ELF"},
		{"text", []byte("#!/bin/sh\necho hi\n"), "not an ELF"},
		{"header only", real[:64], "truncated"},
		{"first megabyte", real[:1<<20], "truncated"},
		{"missing last byte", real[:len(real)-1], "truncated"},
		{"other machine", otherMachine, "built for"},
		{"no OrtGetApiBase", renamed, "not ONNX Runtime"},
	}
	// A Go test binary is an executable, unless built as a PIE.
	if testBinary[16] == 2 { // ET_EXEC
		tests = append(tests, struct {
			name    string
			data    []byte
			wantErr string
		}{"executable", testBinary, "not a shared library"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLibraryELF(bytes.NewReader(tc.data), int64(len(tc.data)))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzCheckLibraryELF: the check reads files named by configuration before
// anything is loaded; no input may make it panic.
func FuzzCheckLibraryELF(f *testing.F) {
	real := realLibrary(f)
	f.Add(real[:64])
	f.Add(real[:4096])
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("not a library"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkLibraryELF(bytes.NewReader(data), int64(len(data)))
		if err == nil && !bytes.Contains(data, []byte("OrtGetApiBase")) {
			t.Fatalf("accepted %d bytes without an OrtGetApiBase symbol", len(data))
		}
	})
}
