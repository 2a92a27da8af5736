package quant

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/mynah-tts/mynah/quant/cpuclass"
)

// Report says what Quantize did, weight by weight.
type Report struct {
	Mode Mode
	// Target is the class of CPU the model was made for, and Int8Format
	// the format of its MatMulInteger weights ("" when it has none).
	Target     cpuclass.Class
	Int8Format cpuclass.Int8Format
	// Rows has one entry per rewritten weight, in graph order. A weight
	// shared by several nodes has one row, naming its first consumer.
	Rows []Row
	// Skipped lists candidate weights left as they were, and why.
	Skipped []Skip
	// WeightBytesBefore and WeightBytesAfter sum the rows' bytes.
	WeightBytesBefore, WeightBytesAfter int64
	// BytesBefore and BytesAfter are the serialized model sizes.
	BytesBefore, BytesAfter int64
	// OpsetsAdded lists the opset imports the rewrite added ("com.microsoft").
	OpsetsAdded []string
	// ConstantsLifted counts Constant nodes whose float tensor became an
	// initializer of the same name, so that it could be rewritten too.
	ConstantsLifted int
}

// Row is one rewritten weight.
type Row struct {
	Node   string // first consuming node (its name, or op#index when unnamed)
	OpType string // that node's operator
	Weight string
	Shape  []int64
	// OldBytes is the float32 size; NewBytes what replaced it (quantized
	// values, scales, and the transposed copy a Gemm with transB needs).
	OldBytes, NewBytes int64
	Mode               Mode // ModeFP16Store, ModeInt8 or ModeNBits
}

// Skip is a candidate weight that was not rewritten.
type Skip struct {
	Node, OpType, Weight string
	Reason               string
}

// Ratio is BytesAfter / BytesBefore, or 0 when nothing was measured.
func (r Report) Ratio() float64 {
	if r.BytesBefore == 0 {
		return 0
	}
	return float64(r.BytesAfter) / float64(r.BytesBefore)
}

// String formats the report as the summary table the CLI prints.
func (r Report) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "weight\top\tshape\tmode\tbefore\tafter")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", row.Weight, row.OpType, row.Shape, row.Mode,
			humanBytes(row.OldBytes), humanBytes(row.NewBytes))
	}
	tw.Flush()
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "kept %s (%s %s): %s\n", s.Weight, s.OpType, s.Node, s.Reason)
	}
	if r.ConstantsLifted > 0 {
		fmt.Fprintf(&b, "constants lifted to initializers: %d\n", r.ConstantsLifted)
	}
	if len(r.OpsetsAdded) > 0 {
		fmt.Fprintf(&b, "opsets added: %s\n", strings.Join(r.OpsetsAdded, ", "))
	}
	if r.Int8Format != "" {
		fmt.Fprintf(&b, "int8 MatMul weights: %s (for %s CPUs; exact on %s)\n", r.Int8Format, r.Target, cpuclass.List(r.Int8Format.ExactClasses()))
	}
	fmt.Fprintf(&b, "%s: %d weights, %s → %s; model %s → %s (%.2f×)\n", r.Mode, len(r.Rows),
		humanBytes(r.WeightBytesBefore), humanBytes(r.WeightBytesAfter),
		humanBytes(r.BytesBefore), humanBytes(r.BytesAfter), r.Ratio())
	return b.String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
