//go:build !cgo || !unix

package data

import "errors"

// Without cgo (or dlopen) there is no way to call libjpeg-turbo: image/jpeg
// decodes.

func loadTurbo() error {
	return errors.New("libjpeg-turbo needs cgo on a Unix system; this binary was built without it")
}

type turboHandle struct{}

func newTurboHandle() (*turboHandle, error) { return nil, loadTurbo() }

func (t *turboHandle) header(b []byte) (w, h int, cmyk bool, err error) {
	return 0, 0, false, loadTurbo()
}

func (t *turboHandle) decode(b []byte, dst []byte, w, h int) error { return loadTurbo() }

func (t *turboHandle) reset() error { return loadTurbo() }
