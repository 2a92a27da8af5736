package voice

import (
	"fmt"
	"slices"
	"testing"
)

func TestCutRuns(t *testing.T) {
	const sp = 9 // the space token
	seq := func(v ...int64) []int64 { return v }
	for _, c := range []struct {
		tokens []int64
		limit  int
		space  []int64
		want   [][]int64
	}{
		{seq(), 4, []int64{sp}, [][]int64{seq()}},
		{seq(1, 2, 3), 4, []int64{sp}, [][]int64{seq(1, 2, 3)}},
		{seq(1, 2, 3, 4), 4, []int64{sp}, [][]int64{seq(1, 2, 3, 4)}},
		// Cut after the last space that fits.
		{seq(1, sp, 2, sp, 3, 4), 4, []int64{sp}, [][]int64{seq(1, sp, 2, sp), seq(3, 4)}},
		{seq(1, 2, sp, 3, 4, 5, 6), 4, []int64{sp}, [][]int64{seq(1, 2, sp), seq(3, 4, 5, 6)}},
		// No space in reach: cut at the limit.
		{seq(1, 2, 3, 4, 5, 6, 7, 8, 9), 4, nil, [][]int64{seq(1, 2, 3, 4), seq(5, 6, 7, 8), seq(9)}},
		{seq(1, 2, 3, 4, 5, sp), 4, []int64{sp}, [][]int64{seq(1, 2, 3, 4), seq(5, sp)}},
		// A leading space is no place to cut (the run would be empty of words).
		{seq(sp, 1, 2, 3, 4), 4, []int64{sp}, [][]int64{seq(sp, 1, 2, 3), seq(4)}},
		// A space of two ids is not split.
		{seq(1, 7, sp, 2, 3, 4), 4, []int64{7, sp}, [][]int64{seq(1, 7, sp), seq(2, 3, 4)}},
		{seq(1, 2, 3), 1, []int64{sp}, [][]int64{seq(1), seq(2), seq(3)}},
	} {
		t.Run(fmt.Sprint(c.tokens, c.limit), func(t *testing.T) {
			got := cutRuns(c.tokens, c.limit, c.space)
			if !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Fatalf("cutRuns = %v, want %v", got, c.want)
			}
		})
	}
}
