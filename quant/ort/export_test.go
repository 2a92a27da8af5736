package ort

// What the external tests (package ort_test) reach inside the package.

// ModelIO is modelIO: the inputs and outputs read from the protobuf.
var ModelIO = modelIO

// BuiltModels are this package's test models by name, as bytes.
func BuiltModels() map[string][]byte {
	models := map[string][]byte{}
	for name, m := range map[string]func() testModel{
		"add": addModel, "matmul": matMulModel, "ids": idsModel, "concat": concatModel, "identity": identityModel,
	} {
		models[name] = m().bytes()
	}
	// An initializer listed as an input too, as IR 3 required, and an
	// output of unknown rank.
	ir3 := matMulModel()
	ir3.inputs = append(ir3.inputs, tensorValue("W", onnxFloat, 4, 3))
	ir3.outputs[0] = valueInfo{name: "y", elem: onnxFloat}
	models["matmul-ir3"] = ir3.bytes()
	return models
}

// InferredOutputModel is y = Identity(x) with x float32 [2, 3] and y
// declared [N, M]: ONNX Runtime's shape inference makes y [2, 3].
func InferredOutputModel() []byte {
	return testModel{
		nodes:   []node{{op: "Identity", inputs: []string{"x"}, outputs: []string{"y"}}},
		inputs:  []valueInfo{tensorValue("x", onnxFloat, 2, 3)},
		outputs: []valueInfo{tensorValue("y", onnxFloat, "N", "M")},
	}.bytes()
}
