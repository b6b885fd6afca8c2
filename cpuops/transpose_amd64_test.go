package cpuops

import "testing"

// TestTranspose16x8: both paths of transpose16x8, the AVX-512 pass and two
// AVX2 8x8 transposes, write panel row i, tap j as src[offs[j]+i], every
// float of the eight rows, from rows at scattered offsets (two adjacent,
// the last near the end of src). The destination starts NaN-free but not
// zero, so a lane left unwritten shows.
func TestTranspose16x8(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	src := make([]float32, 700)
	for i := range src {
		src[i] = float32(i)
	}
	offs := [16]int{0, 9, 30, 31, 100, 150, 151, 280, 281, 300, 333, 401, 450, 500, 640, 689}
	has := useAVX512
	defer func() { useAVX512 = has }()
	for _, avx512 := range []bool{false, true} {
		if avx512 && !has {
			t.Log("no AVX-512 here: the AVX2 path only")
			continue
		}
		useAVX512 = avx512
		dst := make([]float32, 16*8)
		for i := range dst {
			dst[i] = -1
		}
		if !transpose16x8(dst, src[3:], &offs) {
			t.Fatalf("avx512=%v: transpose16x8 reported false with AVX2", avx512)
		}
		for i := 0; i < 8; i++ {
			for j := 0; j < 16; j++ {
				if want := src[3+offs[j]+i]; dst[16*i+j] != want {
					t.Fatalf("avx512=%v: dst[%d][%d] = %v, want %v", avx512, i, j, dst[16*i+j], want)
				}
			}
		}
	}
}

// BenchmarkTranspose16x8: eight 16-wide panel rows from rows in L1, by the
// AVX-512 pass and by two AVX2 8x8 transposes, side by side.
func BenchmarkTranspose16x8(b *testing.B) {
	src := make([]float32, 16*64)
	var offs [16]int
	for j := range offs {
		offs[j] = 64 * j
	}
	dst := make([]float32, 16*8)
	has := useAVX512
	defer func() { useAVX512 = has }()
	for _, avx512 := range []bool{false, true} {
		name := "avx2"
		if avx512 {
			name = "avx512"
		}
		b.Run(name, func(b *testing.B) {
			if avx512 && !has || !useAVX2 {
				b.Skip("not on this CPU")
			}
			useAVX512 = avx512
			for b.Loop() {
				transpose16x8(dst, src, &offs)
			}
		})
	}
}
