//go:build !cgo

package ort

// Without cgo there is no way to load ONNX Runtime. These stubs keep the
// package (and everything importing it) building; Open reports
// ErrUnsupported before any of them can be reached.

const cgoEnabled = false

type backendSession struct{}

func loadLibrary(string) (string, error) { return "", ErrUnsupported }

func releaseLibrary() error { return nil }

func ortModelIO([]byte) ([]TensorInfo, []TensorInfo, error) { return nil, nil, ErrUnsupported }

func newBackendSession([]byte, []TensorInfo, []TensorInfo, SessionOptions, Provider) (*backendSession, error) {
	return nil, ErrUnsupported
}

func (*backendSession) metadata() (map[string]string, error) { return nil, ErrUnsupported }

func (*backendSession) run([]Tensor, []Tensor, bool) ([]Tensor, error) { return nil, ErrUnsupported }

func (*backendSession) destroy() error { return nil }
