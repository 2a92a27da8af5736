//go:build cgo

package ort

// Run configuration entries, which onnxruntime_go v1.27.0 does not offer:
// its RunOptions can only be terminated. The entries are set through ONNX
// Runtime's C API directly, looked up in the library onnxruntime_go already
// loaded. The C API is a table of function pointers that ONNX Runtime only
// ever appends to, so an entry's index is fixed for every release that has
// it; the indices below are those of onnxruntime_c_api.h (the API version
// 24 header onnxruntime_go v1.27.0 ships), and the table is asked for at
// version 23, the first with GetRunConfigEntry. newRunConfig reads every
// entry back through it, so a wrong index or a library without them is an
// error, not a wrong setting.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtRunOptions OrtRunOptions;

typedef struct {
	const void *(*GetApi)(uint32_t version);
	const char *(*GetVersionString)(void);
} mynah_api_base;

// Indices into OrtApi (onnxruntime_c_api.h, struct OrtApi).
enum {
	mynah_get_error_message = 2,
	mynah_release_status = 93,
	mynah_add_run_config_entry = 165,
	mynah_get_run_config_entry = 373, // since ONNX Runtime 1.23 (API 23)
	mynah_api_version = 23,
};

// mynah_ort_api returns the OrtApi table of the library at path, which
// must already be loaded, or NULL.
static void *const *mynah_ort_api(const char *path) {
	void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (h == NULL) return NULL;
	const mynah_api_base *(*get_base)(void) = (const mynah_api_base *(*)(void))dlsym(h, "OrtGetApiBase");
	const void *api = NULL;
	if (get_base != NULL) {
		const mynah_api_base *base = get_base();
		if (base != NULL) api = base->GetApi(mynah_api_version);
	}
	dlclose(h); // onnxruntime_go's own handle keeps the library loaded
	return (void *const *)api;
}

// mynah_add_run_config sets key=value on opts and returns NULL, or an
// error message the caller frees.
static char *mynah_add_run_config(void *const *api, OrtRunOptions *opts, const char *key, const char *value) {
	OrtStatus *(*add)(OrtRunOptions *, const char *, const char *) =
		(OrtStatus *(*)(OrtRunOptions *, const char *, const char *))api[mynah_add_run_config_entry];
	OrtStatus *st = add(opts, key, value);
	if (st == NULL) return NULL;
	const char *(*msg)(const OrtStatus *) = (const char *(*)(const OrtStatus *))api[mynah_get_error_message];
	void (*release)(OrtStatus *) = (void (*)(OrtStatus *))api[mynah_release_status];
	char *out = strdup(msg(st));
	release(st);
	return out;
}

// mynah_get_run_config returns the value of key in opts, NULL when unset;
// the string belongs to opts.
static const char *mynah_get_run_config(void *const *api, const OrtRunOptions *opts, const char *key) {
	const char *(*get)(const OrtRunOptions *, const char *) =
		(const char *(*)(const OrtRunOptions *, const char *))api[mynah_get_run_config_entry];
	return get(opts, key);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	onnx "github.com/yalue/onnxruntime_go"
)

// Run configuration keys (onnxruntime_run_options_config_keys.h).
const (
	// runKeyArenaShrink names the devices whose arena gives back its free
	// regions at the end of each run ("cpu:0").
	runKeyArenaShrink = "memory.enable_memory_arena_shrinkage"
)

// runOptionsPointer is the OrtRunOptions behind onnxruntime_go's
// RunOptions, whose only field is that pointer (checked, so that a
// release that changes the struct fails here instead of handing ONNX
// Runtime something else).
func runOptionsPointer(ro *onnx.RunOptions) (*C.OrtRunOptions, error) {
	t := reflect.TypeFor[onnx.RunOptions]()
	if t.NumField() != 1 || t.Field(0).Type.Kind() != reflect.Pointer || t.Size() != unsafe.Sizeof(uintptr(0)) {
		return nil, errors.New("onnxruntime_go's RunOptions is not the single pointer this package expects")
	}
	var p *C.OrtRunOptions
	if ro != nil {
		p = *(**C.OrtRunOptions)(unsafe.Pointer(ro))
	}
	if p == nil {
		return nil, errors.New("run options are not initialized")
	}
	return p, nil
}

// runConfigAPI is the loaded library's C API table and ro's OrtRunOptions.
func runConfigAPI(ro *onnx.RunOptions) (*unsafe.Pointer, *C.OrtRunOptions, error) {
	p, err := runOptionsPointer(ro)
	if err != nil {
		return nil, nil, fmt.Errorf("run options: %w", err)
	}
	lib.mu.Lock()
	path := lib.path
	lib.mu.Unlock()
	if path == "" {
		return nil, nil, errors.New("run options: onnx runtime is not loaded")
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	api := C.mynah_ort_api(cpath)
	if api == nil {
		return nil, nil, fmt.Errorf("run options: %s has no C API version %d: %w", path, C.mynah_api_version, ErrBadLibrary)
	}
	return api, p, nil
}

// newRunConfig makes run options with the given entries set, each read
// back to prove it took. The caller destroys them.
func newRunConfig(entries map[string]string) (*onnx.RunOptions, error) {
	ro, err := onnx.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("run options: %w", err)
	}
	if err := setRunConfig(ro, entries); err != nil {
		ro.Destroy()
		return nil, err
	}
	return ro, nil
}

func setRunConfig(ro *onnx.RunOptions, entries map[string]string) error {
	api, p, err := runConfigAPI(ro)
	if err != nil {
		return err
	}
	for key, value := range entries {
		ck, cv := C.CString(key), C.CString(value)
		msg := C.mynah_add_run_config(api, p, ck, cv)
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
		if msg != nil {
			err := C.GoString(msg)
			C.free(unsafe.Pointer(msg))
			return fmt.Errorf("run option %q=%q: onnx runtime refused it: %s", key, value, err)
		}
		if got, ok := getRunConfig(api, p, key); !ok || got != value {
			return fmt.Errorf("run option %q=%q did not take (read back %q): %w", key, value, got, ErrBadLibrary)
		}
	}
	return nil
}

// runConfigEntry reads key back from ro; ok is false when it is not set.
func runConfigEntry(ro *onnx.RunOptions, key string) (value string, ok bool, err error) {
	api, p, err := runConfigAPI(ro)
	if err != nil {
		return "", false, err
	}
	value, ok = getRunConfig(api, p, key)
	return value, ok, nil
}

func getRunConfig(api *unsafe.Pointer, p *C.OrtRunOptions, key string) (string, bool) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	v := C.mynah_get_run_config(api, p, ck)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
