package trainer

import (
	"testing"

	"stoke/data"
)

// TestLoaderLineNamesTheDecodersOfTheFilesPresent: an all-PNG dataset is
// not announced as read by a JPEG decoder, and counts are pluralised.
func TestLoaderLineNamesTheDecodersOfTheFilesPresent(t *testing.T) {
	set := func(paths ...string) *data.Index {
		ix := &data.Index{}
		for _, p := range paths {
			ix.Samples = append(ix.Samples, data.Sample{Path: p})
		}
		return ix
	}
	for _, tc := range []struct {
		sets []*data.Index
		want string
	}{
		{[]*data.Index{set("a/x.png", "a/y.PNG"), set("b/z.png")}, "PNG decoder image/png"},
		{[]*data.Index{set("a/x.jpg", "a/y.JPEG"), set("b/z.jpg")}, "JPEG decoder libjpeg-turbo"},
		{[]*data.Index{set("a/x.jpg", "a/y.png"), set("b/z.png")}, "PNG decoder image/png (2 of the 3 images), JPEG decoder libjpeg-turbo"},
	} {
		if got := decodersLine("libjpeg-turbo", tc.sets...); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	for n, want := range map[int]string{0: "0 threads", 1: "1 thread", 2: "2 threads"} {
		if got := plural(n, "thread"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}
