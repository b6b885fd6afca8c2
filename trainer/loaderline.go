package trainer

import (
	"fmt"
	"path/filepath"
	"strings"

	"stoke/data"
)

// decodersLine names the decoders that read the images present: the JPEG
// decoder data.decoder resolves to (jpeg) for .jpg and .jpeg files, Go's
// image/png for .png files. It judges by extension (the loader picks a
// decoder by the file's content, and a .png holding a JPEG is rare): an
// all-PNG dataset used to be announced as "JPEG decoder libjpeg-turbo".
func decodersLine(jpeg string, sets ...*data.Index) string {
	var jpegs, pngs int
	for _, set := range sets {
		for _, s := range set.Samples {
			if strings.EqualFold(filepath.Ext(s.Path), ".png") {
				pngs++
			} else {
				jpegs++
			}
		}
	}
	switch {
	case pngs == 0:
		return "JPEG decoder " + jpeg
	case jpegs == 0:
		return "PNG decoder image/png"
	}
	return fmt.Sprintf("PNG decoder image/png (%d of the %d images), JPEG decoder %s", pngs, pngs+jpegs, jpeg)
}

// plural is "1 thread", "2 threads".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
