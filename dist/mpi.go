//go:build cgo && unix

package dist

// Open MPI's libmpi.so.40, loaded at run time with dlopen rather than
// linked, as data/turbo.go loads libjpeg-turbo and cudaops loads libcuda:
// the binary builds with nothing but Go and a C compiler, runs on machines
// without MPI, and uses it where it is installed (Debian: openmpi-bin,
// libopenmpi3). The functions are declared here from the MPI 3.1 standard
// and the handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, MPI_ERRORS_RETURN)
// are Open MPI's: the addresses of its predefined objects, found with
// dlsym as <mpi.h> would name them (OMPI_PREDEFINED_GLOBAL). MPICH's
// integer handles are a different ABI and are not supported.
//
// Threads: MPI is initialized with MPI_THREAD_FUNNELED and every MPI call
// is made from one goroutine locked to its OS thread (the "comm thread"),
// which owns the world; collectives are nonblocking (MPI_Iallreduce,
// MPI_Ibcast, MPI_Ibarrier), driven by MPI_Test polls, so that several can
// be in flight (the gradient buckets of one step) and each has a deadline.
// Errors return codes (MPI_ERRORS_RETURN) instead of aborting inside MPI,
// so that the message can name the rank and the collective.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef void *H; // an Open MPI handle: a pointer to a predefined object

static int (*p_init_thread)(int *, char ***, int, int *);
static int (*p_finalize)(void);
static int (*p_abort)(H, int);
static int (*p_comm_rank)(H, int *);
static int (*p_comm_size)(H, int *);
static int (*p_set_errhandler)(H, H);
static int (*p_iallreduce)(const void *, void *, int, H, H, H, H *);
static int (*p_ibcast)(void *, int, H, int, H, H *);
static int (*p_ibarrier)(H, H *);
static int (*p_test)(H *, int *, void *);
static int (*p_error_string)(int, char *, int *);
static int (*p_library_version)(char *, int *);
static H h_world, h_float, h_double, h_byte, h_sum, h_errors_return;

static const char *stoke_mpi_load(const char *name) {
	// RTLD_GLOBAL: Open MPI's own plugins (mca_*.so) resolve symbols of
	// libmpi and libopen-pal against the global namespace.
	void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
	if (!h) return dlerror();
#define SYM(p, s) if (!(*(void **)(&p) = dlsym(h, s))) return "symbol " s " is missing (want Open MPI >= 3, libmpi.so.40)";
	SYM(p_init_thread, "MPI_Init_thread")
	SYM(p_finalize, "MPI_Finalize")
	SYM(p_abort, "MPI_Abort")
	SYM(p_comm_rank, "MPI_Comm_rank")
	SYM(p_comm_size, "MPI_Comm_size")
	SYM(p_set_errhandler, "MPI_Comm_set_errhandler")
	SYM(p_iallreduce, "MPI_Iallreduce")
	SYM(p_ibcast, "MPI_Ibcast")
	SYM(p_ibarrier, "MPI_Ibarrier")
	SYM(p_test, "MPI_Test")
	SYM(p_error_string, "MPI_Error_string")
	SYM(p_library_version, "MPI_Get_library_version")
	SYM(h_world, "ompi_mpi_comm_world")
	SYM(h_float, "ompi_mpi_float")
	SYM(h_double, "ompi_mpi_double")
	SYM(h_byte, "ompi_mpi_byte")
	SYM(h_sum, "ompi_mpi_op_sum")
	SYM(h_errors_return, "ompi_mpi_errors_return")
#undef SYM
	return 0;
}

static int stoke_mpi_init(int required, int *provided) { return p_init_thread(0, 0, required, provided); }
static int stoke_mpi_finalize(void) { return p_finalize(); }
static int stoke_mpi_abort(int code) { return p_abort(h_world, code); }
static int stoke_mpi_rank(int *r) { return p_comm_rank(h_world, r); }
static int stoke_mpi_size(int *s) { return p_comm_size(h_world, s); }
static int stoke_mpi_errors_return(void) { return p_set_errhandler(h_world, h_errors_return); }

// dtype: 0 float, 1 double, 2 byte.
static H stoke_dtype(int t) { return t == 0 ? h_float : t == 1 ? h_double : h_byte; }

static int stoke_mpi_iallreduce(void *buf, int count, int dtype, H *req) {
	// (void *)1 is MPI_IN_PLACE.
	return p_iallreduce((void *)1, buf, count, stoke_dtype(dtype), h_sum, h_world, req);
}
static int stoke_mpi_ibcast(void *buf, int count, int dtype, int root, H *req) {
	return p_ibcast(buf, count, stoke_dtype(dtype), root, h_world, req);
}
static int stoke_mpi_ibarrier(H *req) { return p_ibarrier(h_world, req); }
static int stoke_mpi_test(H *req, int *flag) { return p_test(req, flag, 0); } // 0 is MPI_STATUS_IGNORE
static void stoke_mpi_error_string(int code, char *s) {
	int n = 0;
	if (p_error_string(code, s, &n) != 0) n = 0;
	s[n < 255 ? n : 255] = 0;
}
static void stoke_mpi_version(char *s) {
	int n = 0;
	if (p_library_version(s, &n) != 0) n = 0;
	s[n < 255 ? n : 255] = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// From the MPI standard (MPI_THREAD_* in the order the standard gives them).
const (
	mpiThreadFunneled = 1
	mpiSuccess        = 0
)

// DefaultMPILibrary is the Open MPI library loaded when Options.Library is empty.
const DefaultMPILibrary = "libmpi.so.40"

var mpiWorld struct {
	mu   sync.Mutex
	comm *mpiComm
	used bool // MPI may be initialized once per process
}

// OpenMPI joins the MPI world (once per process; MPI cannot be initialized
// again after it is finalized).
func OpenMPI(opt Options) (Comm, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	lib := opt.Library
	if lib == "" {
		lib = DefaultMPILibrary
	}
	mpiWorld.mu.Lock()
	defer mpiWorld.mu.Unlock()
	if mpiWorld.used {
		return nil, errors.New("dist: MPI was already initialized in this process (it can be only once)")
	}
	// Open MPI's signal handlers (opal_signal) would turn a Go panic into
	// its own stack dump; leave signals to Go unless the user chose.
	if _, set := os.LookupEnv("OMPI_MCA_opal_signal"); !set {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	cname := C.CString(lib)
	msg := C.stoke_mpi_load(cname)
	C.free(unsafe.Pointer(cname))
	if msg != nil {
		return nil, fmt.Errorf("dist: MPI is not available: %s could not be loaded (%s); install Open MPI (Debian: apt-get install openmpi-bin libopenmpi3) and launch with `mpirun -np N train ...`, or set train.dist none", lib, C.GoString(msg))
	}
	mpiWorld.used = true
	c := &mpiComm{timeout: opt.Timeout, cmds: make(chan *mpiOp, 64), exited: make(chan struct{})}
	ready := make(chan error, 1)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	mpiWorld.comm = c
	return c, nil
}

type mpiComm struct {
	rank, size int
	version    string
	timeout    time.Duration
	cmds       chan *mpiOp
	exited     chan struct{}
	closeOnce  sync.Once
	failMu     sync.Mutex
	failed     error // the first collective that failed; later ones are refused
}

// mpiOp is one collective, started and finished on the comm thread.
type mpiOp struct {
	what     string
	start    func(c *mpiComm, req *C.H) C.int // on the comm thread
	finish   func()                           // on the comm thread, once done: copy out
	done     chan error
	req      C.H
	deadline time.Time
	final    func() // Close/Abort: runs on the comm thread, which then exits
}

func (o *mpiOp) Wait() error { return <-o.done }

func mpiError(code C.int) error {
	var buf [256]C.char
	C.stoke_mpi_error_string(code, &buf[0])
	return fmt.Errorf("MPI error %d: %s", int(code), C.GoString(&buf[0]))
}

// loop is the comm thread: it initializes MPI, then starts the collectives
// it is sent, in order, and polls those in flight until each is done or
// past its deadline.
func (c *mpiComm) loop(ready chan<- error) {
	runtime.LockOSThread() // for good: this thread is MPI's "main" thread (FUNNELED)
	defer close(c.exited)
	if err := c.initWorld(); err != nil {
		ready <- err
		return
	}
	ready <- nil

	var active []*mpiOp
	idle := 0
	for {
		var op *mpiOp
		if len(active) == 0 {
			op = <-c.cmds
		} else {
			select {
			case op = <-c.cmds:
			default:
			}
		}
		if op != nil {
			if op.final != nil {
				op.final()
				op.done <- nil
				return
			}
			if c.startOp(op) {
				active = append(active, op)
			}
			continue
		}
		var progressed bool
		active, progressed = c.poll(active)
		// Poll hard while collectives complete, then back off to a few
		// tens of microseconds so that a waiting rank leaves the cores to
		// the compute.
		if progressed {
			idle = 0
		} else if idle++; idle > 50 {
			time.Sleep(time.Duration(min(idle-50, 50)) * time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
}

// initWorld initializes MPI (FUNNELED) on the comm thread, makes its errors
// return codes, and reads this rank, the world's size and the library's
// version.
func (c *mpiComm) initWorld() error {
	var provided C.int
	if code := C.stoke_mpi_init(mpiThreadFunneled, &provided); code != mpiSuccess {
		return fmt.Errorf("dist: MPI_Init_thread failed (code %d); is this process started by mpirun?", int(code))
	}
	if provided < mpiThreadFunneled {
		// SINGLE: still sound here, since one thread makes every call, but say so.
		fmt.Fprintf(os.Stderr, "dist: note: MPI provides thread level %d < MPI_THREAD_FUNNELED; every MPI call is made from one thread anyway\n", int(provided))
	}
	if code := C.stoke_mpi_errors_return(); code != mpiSuccess {
		return fmt.Errorf("dist: MPI_Comm_set_errhandler: %w", mpiError(code))
	}
	var r, s C.int
	C.stoke_mpi_rank(&r)
	C.stoke_mpi_size(&s)
	c.rank, c.size = int(r), int(s)
	var vbuf [256]C.char
	C.stoke_mpi_version(&vbuf[0])
	c.version = strings.TrimSpace(strings.SplitN(C.GoString(&vbuf[0]), ",", 2)[0])
	return nil
}

// startOp starts op's collective with its deadline, on the comm thread. It
// reports whether op is now in flight; if MPI refused it, op is answered
// with the error.
func (c *mpiComm) startOp(op *mpiOp) bool {
	op.deadline = time.Now().Add(c.timeout)
	var req C.H // not &op.req: cgo refuses a pointer into a struct holding Go pointers
	code := op.start(c, &req)
	op.req = req
	if code != mpiSuccess {
		op.done <- c.fail(&RankError{Rank: c.rank, Op: op.what, Err: mpiError(code)})
		return false
	}
	return true
}

// poll tests each collective in flight once, on the comm thread, and
// answers those done, failed or past their deadline. It returns the ones
// still in flight (reusing active's array) and whether any was answered.
func (c *mpiComm) poll(active []*mpiOp) (kept []*mpiOp, progressed bool) {
	now := time.Now()
	kept = active[:0]
	for _, o := range active {
		var flag C.int
		req := o.req
		code := C.stoke_mpi_test(&req, &flag)
		o.req = req
		switch {
		case code != mpiSuccess:
			o.done <- c.fail(&RankError{Rank: c.rank, Op: o.what, Err: mpiError(code)})
		case flag != 0:
			if o.finish != nil {
				o.finish()
			}
			o.done <- nil
		case now.After(o.deadline):
			// Its buffer stays with MPI (leaked): the job is ending.
			o.done <- c.fail(&RankError{Rank: c.rank, Op: o.what, Err: fmt.Errorf("%w (no answer in %v)", ErrTimeout, c.timeout)})
		default:
			kept = append(kept, o)
			continue
		}
		progressed = true
	}
	return kept, progressed
}

func (c *mpiComm) fail(err error) error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if c.failed == nil {
		c.failed = err
	}
	return err
}

func (c *mpiComm) send(op *mpiOp) (*mpiOp, error) {
	c.failMu.Lock()
	failed := c.failed
	c.failMu.Unlock()
	if failed != nil {
		return nil, fmt.Errorf("rank %d: %s refused: an earlier collective failed (%v)", c.rank, op.what, failed)
	}
	op.done = make(chan error, 1)
	select {
	case c.cmds <- op:
	case <-c.exited:
		return nil, fmt.Errorf("rank %d: %s: the MPI world is closed", c.rank, op.what)
	}
	return op, nil
}

// cbuf is C memory for one collective: MPI keeps the pointer while the
// collective is in flight, which Go memory may not be (cgo's rules).
func cbuf(bytes int) unsafe.Pointer { return C.calloc(C.size_t(max(bytes, 1)), 1) }

// collective sends an op over n elements of size elem at p (Go memory),
// staged through C memory: copied in on start, out on finish.
func (c *mpiComm) collective(what string, p unsafe.Pointer, n, elem int, copyOut bool, start func(buf unsafe.Pointer, req *C.H) C.int) (Request, error) {
	var staged unsafe.Pointer
	op := &mpiOp{what: what}
	op.start = func(c *mpiComm, req *C.H) C.int {
		staged = cbuf(n * elem)
		if n > 0 {
			copy(unsafe.Slice((*byte)(staged), n*elem), unsafe.Slice((*byte)(p), n*elem))
		}
		return start(staged, req)
	}
	op.finish = func() {
		if copyOut && n > 0 {
			copy(unsafe.Slice((*byte)(p), n*elem), unsafe.Slice((*byte)(staged), n*elem))
		}
		C.free(staged)
	}
	return c.send(op)
}

func (c *mpiComm) Rank() int    { return c.rank }
func (c *mpiComm) Size() int    { return c.size }
func (c *mpiComm) Name() string { return "mpi (" + c.version + ")" }

func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

func (c *mpiComm) StartAllreduceSum(buf []float32) (Request, error) {
	return c.collective(fmt.Sprintf("allreduce of %d floats", len(buf)), ptr(buf), len(buf), 4, true, func(b unsafe.Pointer, req *C.H) C.int {
		return C.stoke_mpi_iallreduce(b, C.int(len(buf)), 0, req)
	})
}

func (c *mpiComm) AllreduceSum(buf []float32) error { return wait(c.StartAllreduceSum(buf)) }

func (c *mpiComm) AllreduceSumFloat64(buf []float64) error {
	return wait(c.collective(fmt.Sprintf("allreduce of %d doubles", len(buf)), ptr(buf), len(buf), 8, true, func(b unsafe.Pointer, req *C.H) C.int {
		return C.stoke_mpi_iallreduce(b, C.int(len(buf)), 1, req)
	}))
}

func (c *mpiComm) Broadcast(buf []float32, root int) error {
	return wait(c.collective(fmt.Sprintf("broadcast of %d floats from rank %d", len(buf), root), ptr(buf), len(buf), 4, true, func(b unsafe.Pointer, req *C.H) C.int {
		return C.stoke_mpi_ibcast(b, C.int(len(buf)), 0, C.int(root), req)
	}))
}

func (c *mpiComm) BroadcastBytes(buf []byte, root int) error {
	return wait(c.collective(fmt.Sprintf("broadcast of %d bytes from rank %d", len(buf), root), ptr(buf), len(buf), 1, true, func(b unsafe.Pointer, req *C.H) C.int {
		return C.stoke_mpi_ibcast(b, C.int(len(buf)), 2, C.int(root), req)
	}))
}

func (c *mpiComm) Barrier() error {
	return wait(c.send(&mpiOp{what: "barrier", start: func(_ *mpiComm, req *C.H) C.int { return C.stoke_mpi_ibarrier(req) }}))
}

// Close finalizes MPI after a clean run. After a failure it aborts instead:
// MPI_Finalize would wait for ranks that are gone.
func (c *mpiComm) Close() error {
	c.failMu.Lock()
	failed := c.failed
	c.failMu.Unlock()
	if failed != nil {
		c.Abort(failed)
		return failed
	}
	var err error
	c.closeOnce.Do(func() {
		op := &mpiOp{what: "finalize", done: make(chan error, 1)}
		op.final = func() {
			if code := C.stoke_mpi_finalize(); code != mpiSuccess {
				err = fmt.Errorf("rank %d: MPI_Finalize: %w", c.rank, mpiError(code))
			}
		}
		c.cmds <- op
		<-op.done
	})
	return err
}

// Abort prints reason and ends every rank of the job: MPI_Abort on the comm
// thread, which kills this process too (mpirun then reports the others).
func (c *mpiComm) Abort(reason error) {
	fmt.Fprintf(os.Stderr, "rank %d of %d: %v; aborting the job\n", c.rank, c.size, reason)
	c.closeOnce.Do(func() {
		op := &mpiOp{what: "abort", done: make(chan error, 1)}
		op.final = func() { C.stoke_mpi_abort(1) }
		select {
		case c.cmds <- op:
			select {
			case <-op.done:
			case <-time.After(10 * time.Second):
			}
		case <-time.After(10 * time.Second):
		}
	})
	os.Exit(1) // if MPI_Abort returned, or the comm thread was wedged
}
