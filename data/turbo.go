//go:build cgo && unix

package data

// libjpeg-turbo's TurboJPEG API (libturbojpeg.so.0), loaded at run time
// with dlopen rather than linked: the binary then builds with nothing but
// Go and a C compiler, runs on a machine without the library (falling back
// to image/jpeg), and uses it where it is installed (Debian: libturbojpeg0),
// with no build tag to remember. The functions are declared here, from
// turbojpeg.h of libjpeg-turbo 2.1 (their ABI has been stable since 1.2), so
// no header is needed at build time either.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void *tjhandle;
typedef tjhandle (*tjInitDecompress_f)(void);
typedef int (*tjDecompressHeader3_f)(tjhandle, const unsigned char *, unsigned long, int *, int *, int *, int *);
typedef int (*tjDecompress2_f)(tjhandle, const unsigned char *, unsigned long, unsigned char *, int, int, int, int, int);
typedef char *(*tjGetErrorStr2_f)(tjhandle);
typedef int (*tjDestroy_f)(tjhandle);

static tjInitDecompress_f p_init;
static tjDecompressHeader3_f p_header;
static tjDecompress2_f p_decompress;
static tjGetErrorStr2_f p_errstr;
static tjDestroy_f p_destroy;

// stoke_tj_load opens the library and resolves every function, or returns
// what failed.
static const char *stoke_tj_load(const char *name) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	p_init = (tjInitDecompress_f)dlsym(h, "tjInitDecompress");
	p_header = (tjDecompressHeader3_f)dlsym(h, "tjDecompressHeader3");
	p_decompress = (tjDecompress2_f)dlsym(h, "tjDecompress2");
	p_errstr = (tjGetErrorStr2_f)dlsym(h, "tjGetErrorStr2");
	p_destroy = (tjDestroy_f)dlsym(h, "tjDestroy");
	if (!p_init || !p_header || !p_decompress || !p_errstr || !p_destroy) {
		return "a TurboJPEG function is missing (want libjpeg-turbo >= 2.0)";
	}
	return 0;
}

static tjhandle stoke_tj_init(void) { return p_init(); }
static int stoke_tj_destroy(tjhandle h) { return p_destroy(h); }
static const char *stoke_tj_errstr(tjhandle h) { return p_errstr(h); }

static int stoke_tj_header(tjhandle h, const unsigned char *buf, unsigned long n, int *w, int *hh, int *subsamp, int *cs) {
	return p_header(h, buf, n, w, hh, subsamp, cs);
}

static int stoke_tj_decompress(tjhandle h, const unsigned char *buf, unsigned long n, unsigned char *dst, int w, int pitch, int hh, int pf, int flags) {
	return p_decompress(h, buf, n, dst, w, pitch, hh, pf, flags);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// From turbojpeg.h.
const (
	tjpfRGBA    = 7 // TJPF_RGBA: R, G, B, then 0xFF for images without alpha
	tjcsCMYK    = 3 // TJCS_CMYK
	tjcsYCCK    = 4 // TJCS_YCCK
	tjFlagNoRea = 1024
)

var turboLoad struct {
	once sync.Once
	err  error
}

// turboLibraries are the names tried, the versioned one first (the
// unversioned link comes only with the -dev package).
var turboLibraries = []string{"libturbojpeg.so.0", "libturbojpeg.so"}

// loadTurbo opens libturbojpeg once per process.
func loadTurbo() error {
	turboLoad.once.Do(func() {
		var errs []string
		for _, name := range turboLibraries {
			cname := C.CString(name)
			msg := C.stoke_tj_load(cname)
			C.free(unsafe.Pointer(cname))
			if msg == nil {
				turboLoad.err = nil
				return
			}
			errs = append(errs, C.GoString(msg))
		}
		turboLoad.err = fmt.Errorf("libjpeg-turbo not loadable (%s); install Debian's libturbojpeg0 for the fast JPEG path", errs[0])
	})
	return turboLoad.err
}

// turboHandle is one TurboJPEG decompressor: not safe for concurrent use,
// so each Decoder has its own, destroyed when the Decoder is collected.
type turboHandle struct {
	h       C.tjhandle
	cleanup runtime.Cleanup // destroys h if t is collected first
	// The header's outputs live here, not on the stack: a Go pointer
	// passed to C escapes, so locals would be allocated per image.
	w, ht, sub, cs C.int
}

func newTurboHandle() (*turboHandle, error) {
	if err := loadTurbo(); err != nil {
		return nil, err
	}
	t := &turboHandle{}
	if err := t.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// open gives t a fresh decompressor.
func (t *turboHandle) open() error {
	h := C.stoke_tj_init()
	if h == nil {
		return fmt.Errorf("tjInitDecompress failed")
	}
	t.h = h
	t.cleanup = runtime.AddCleanup(t, func(h C.tjhandle) { C.stoke_tj_destroy(h) }, h)
	return nil
}

// reset replaces the decompressor with a fresh one. It must follow every
// failed call: libjpeg-turbo 2.1 leaves a handle that failed mid-file in a
// state where later files come out wrong. The next header then reports
// 0x0, or the next decompression fails, and every later image of that
// Decoder goes to image/jpeg. A decode then depends on the files before it;
// after reset it depends on its own bytes only.
func (t *turboHandle) reset() error {
	t.cleanup.Stop()
	C.stoke_tj_destroy(t.h)
	t.h = nil
	return t.open()
}

func (t *turboHandle) errString() string { return C.GoString(C.stoke_tj_errstr(t.h)) }

// header reads the JPEG's size; cmyk reports CMYK and YCCK files, which
// TurboJPEG cannot convert to RGB.
func (t *turboHandle) header(b []byte) (w, h int, cmyk bool, err error) {
	if C.stoke_tj_header(t.h, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), &t.w, &t.ht, &t.sub, &t.cs) != 0 {
		return 0, 0, false, fmt.Errorf("%s", t.errString())
	}
	return int(t.w), int(t.ht), t.cs == tjcsCMYK || t.cs == tjcsYCCK, nil
}

// decode decompresses b into dst, RGBA rows of w*4 bytes, at the scaled
// size w x h (one TurboJPEG supports: full size divided by 1, 2, 4 or 8,
// rounded up). TurboJPEG reports warnings (recoverable flaws such as a
// truncated scan, which libjpeg patches over with gray) as failures too;
// the Decoder then tries image/jpeg, so both decoders refuse the same files.
func (t *turboHandle) decode(b []byte, dst []byte, w, h int) error {
	r := C.stoke_tj_decompress(t.h, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)),
		(*C.uchar)(unsafe.Pointer(&dst[0])), C.int(w), C.int(4*w), C.int(h), tjpfRGBA, tjFlagNoRea)
	if r != 0 {
		return fmt.Errorf("%s", t.errString())
	}
	return nil
}
