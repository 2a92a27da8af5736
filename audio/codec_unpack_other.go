//go:build !amd64 || purego

package audio

// useAVX2 is never set without the amd64 assembly; tests read it.
var useAVX2 = false

func fullPartition(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	fullPartitionGo(res, q, raw, k)
}
