//go:build cgo

package ort_test

import (
	"fmt"
	"os"

	"github.com/mynah-tts/mynah/quant/ort"
)

// A model that adds two float32 [N, 3] tensors (testdata/add.onnx).
func Example() {
	rt, err := ort.Open(nil) // $MYNAH_ORT_LIB, ./.ort, ../.ort, ..., system dirs
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	model, err := os.ReadFile("testdata/add.onnx")
	if err != nil {
		fmt.Println(err)
		return
	}
	sess, err := rt.NewSession(model, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	fmt.Println(sess.Inputs(), "→", sess.Outputs())

	out, err := sess.Run([]ort.Tensor{
		{Name: "x", Shape: []int64{1, 3}, Float32: []float32{1, 2, 3}},
		{Name: "y", Shape: []int64{1, 3}, Float32: []float32{10, 20, 30}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[0].Name, out[0].Type, out[0].Shape, out[0].Float32)

	_, err = sess.Run([]ort.Tensor{{Name: "x", Shape: []int64{1, 3}, Int64: []int64{1, 2, 3}}})
	fmt.Println(err)
	// Output:
	// [x float32[?,3] y float32[?,3]] → [z float32[?,3]]
	// z float32 [1 3] [11 22 33]
	// run: input "x": model wants float32, got int64: tensor does not match the model
}
