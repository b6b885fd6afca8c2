package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// SampleReader reads the bytes of an Index's samples: an ImageFolder's
// files one open each, a shard set's members by pread through one
// descriptor per shard, opened on first use and shared by every goroutine
// (so an epoch opens each shard once, however many workers read it). It is
// safe for concurrent use; each goroutine brings its own Decoder.
type SampleReader struct {
	ix    *Index
	mu    sync.Mutex // orders opening and Close
	files []atomic.Pointer[os.File]
	done  bool
}

// NewSampleReader reads the samples of ix. Close it when done.
func NewSampleReader(ix *Index) *SampleReader {
	return &SampleReader{ix: ix, files: make([]atomic.Pointer[os.File], len(ix.Shards))}
}

// Read reads sample i into d's buffer, which it returns (valid until d's
// next read). A file or member that cannot be read is an *ImageError; a
// shard that cannot be opened is not (it is no one image's fault).
func (r *SampleReader) Read(d *Decoder, i int) ([]byte, error) {
	s := &r.ix.Samples[i]
	if s.Member == nil {
		return d.ReadFile(s.Path)
	}
	f, err := r.shard(s.Member.Shard)
	if err != nil {
		return nil, err
	}
	return d.readMember(s.Path, f, s.Member.Offset, s.Member.Size)
}

// shard returns shard k's open file.
func (r *SampleReader) shard(k int) (*os.File, error) {
	if f := r.files[k].Load(); f != nil {
		return f, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, errors.New("data: SampleReader used after Close")
	}
	if f := r.files[k].Load(); f != nil {
		return f, nil
	}
	f, err := os.Open(r.ix.Shards[k].Path)
	if err != nil {
		return nil, fmt.Errorf("data: shard %w", err)
	}
	r.files[k].Store(f)
	return f, nil
}

// Opened is the number of shards opened so far.
func (r *SampleReader) Opened() int {
	n := 0
	for i := range r.files {
		if r.files[i].Load() != nil {
			n++
		}
	}
	return n
}

// Close closes the shards. No Read may be running or follow.
func (r *SampleReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	var errs []error
	for i := range r.files {
		if f := r.files[i].Swap(nil); f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// readMember reads size bytes at off of the shard f into d.file, within
// the same limits as a file (read), for the image called path.
func (d *Decoder) readMember(path string, f *os.File, off, size int64) ([]byte, error) {
	if cap(d.file) > keepBytes {
		d.file = nil // see keepBytes
	}
	limit := min(maxFileBytes(d.MaxPixels), d.maxBytes())
	if size > limit {
		return nil, &ImageError{path, fmt.Errorf("%w: %v", ErrTooLarge, fileTooLarge(size, limit))}
	}
	n := int(size)
	if cap(d.file) < n {
		d.file = make([]byte, n)
	}
	b := d.file[:n]
	if m, err := f.ReadAt(b, off); m < n {
		if err == io.EOF {
			err = fmt.Errorf("the shard ends at byte %d, inside this member (bytes [%d, %d)): it was cut short since it was scanned", off+int64(m), off, off+size)
		}
		return nil, &ImageError{path, fmt.Errorf("%w: %w", ErrUnreadable, err)}
	}
	return b, nil
}
