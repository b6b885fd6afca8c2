//go:build stokecuda && cgo && unix

package dist

// NCCL (libnccl.so.2), loaded at run time with dlopen in the stokecuda
// build, as cudaops loads libcuda.so.1: the few symbols used are declared
// here from nccl.h of NCCL 2.x (ncclUniqueId is a 128-byte struct passed by
// value; ncclFloat32 = 7, ncclSum = 0, ncclSuccess = 0), so neither the
// header nor the library is needed to build. The communicator's unique id
// is made on rank 0 and broadcast over an MPI world (Comm), as nccl-tests
// and Horovod do; collectives are enqueued on the caller's CUDA stream, on
// device memory, and complete when that stream reaches them.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef struct { char internal[128]; } stoke_nccl_id;
typedef void *stoke_nccl_comm;
typedef int stoke_nccl_result;

static stoke_nccl_result (*p_get_unique_id)(stoke_nccl_id *);
static stoke_nccl_result (*p_comm_init_rank)(stoke_nccl_comm *, int, stoke_nccl_id, int);
static stoke_nccl_result (*p_all_reduce)(const void *, void *, size_t, int, int, stoke_nccl_comm, void *);
static stoke_nccl_result (*p_broadcast)(const void *, void *, size_t, int, int, stoke_nccl_comm, void *);
static stoke_nccl_result (*p_comm_destroy)(stoke_nccl_comm);
static const char *(*p_error_string)(stoke_nccl_result);
static stoke_nccl_result (*p_async_error)(stoke_nccl_comm, stoke_nccl_result *);
static stoke_nccl_result (*p_comm_abort)(stoke_nccl_comm);
static const char *(*p_last_error)(stoke_nccl_comm); // NCCL >= 2.13; may be NULL

static const char *stoke_nccl_load(const char *name) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
#define SYM(p, s) if (!(*(void **)(&p) = dlsym(h, s))) return "symbol " s " is missing (want NCCL 2.x)";
	SYM(p_get_unique_id, "ncclGetUniqueId")
	SYM(p_comm_init_rank, "ncclCommInitRank")
	SYM(p_all_reduce, "ncclAllReduce")
	SYM(p_broadcast, "ncclBroadcast")
	SYM(p_comm_destroy, "ncclCommDestroy")
	SYM(p_error_string, "ncclGetErrorString")
	SYM(p_async_error, "ncclCommGetAsyncError")
	SYM(p_comm_abort, "ncclCommAbort")
#undef SYM
	*(void **)(&p_last_error) = dlsym(h, "ncclGetLastError");
	return 0;
}

static int stoke_nccl_unique_id(void *out) {
	stoke_nccl_id id;
	int r = p_get_unique_id(&id);
	memcpy(out, &id, sizeof id);
	return r;
}
static int stoke_nccl_init(stoke_nccl_comm *comm, int n, const void *idbytes, int rank) {
	stoke_nccl_id id;
	memcpy(&id, idbytes, sizeof id);
	return p_comm_init_rank(comm, n, id, rank);
}
// ncclFloat32 = 7, ncclSum = 0.
// Device addresses and streams come as integers: they are not Go memory.
static int stoke_nccl_allreduce_sum(uintptr_t buf, size_t count, stoke_nccl_comm comm, uintptr_t stream) {
	return p_all_reduce((void *)buf, (void *)buf, count, 7, 0, comm, (void *)stream);
}
static int stoke_nccl_broadcast(uintptr_t buf, size_t count, int root, stoke_nccl_comm comm, uintptr_t stream) {
	return p_broadcast((void *)buf, (void *)buf, count, 7, root, comm, (void *)stream);
}
static int stoke_nccl_destroy(stoke_nccl_comm comm) { return p_comm_destroy(comm); }
static const char *stoke_nccl_error(int r) { return p_error_string(r); }
static int stoke_nccl_async_error(stoke_nccl_comm comm, int *out) {
	stoke_nccl_result e = 0;
	int r = p_async_error(comm, &e);
	*out = e;
	return r;
}
static int stoke_nccl_abort(stoke_nccl_comm comm) { return p_comm_abort(comm); }
static const char *stoke_nccl_last_error(stoke_nccl_comm comm) { return p_last_error ? p_last_error(comm) : ""; }
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// NCCLIDBytes is the size of ncclUniqueId.
const NCCLIDBytes = 128

var ncclLoad struct {
	sync.Mutex
	setting string // the library setting of the first load
	done    bool
	path    string // the file loaded
	err     error
}

// LoadNCCL loads NCCL once per process, from the first of
// NCCLCandidates(library) that loads with every symbol used here.
func LoadNCCL(library string) error {
	ncclLoad.Lock()
	defer ncclLoad.Unlock()
	if !ncclLoad.done {
		ncclLoad.done, ncclLoad.setting = true, library
		var tried []string
		for _, c := range NCCLCandidates(library) {
			if strings.Contains(c, "/") {
				if _, err := os.Stat(c); err != nil {
					tried = append(tried, c+": not there")
					continue
				}
			}
			cname := C.CString(c)
			msg := C.stoke_nccl_load(cname)
			C.free(unsafe.Pointer(cname))
			if msg == nil {
				ncclLoad.path = c
				break
			}
			tried = append(tried, c+": "+C.GoString(msg))
		}
		if ncclLoad.path == "" {
			ncclLoad.err = &NoNCCLError{Tried: tried}
		}
	}
	if ncclLoad.err == nil && ncclLoad.setting != library {
		return fmt.Errorf("dist: NCCL was loaded from %s already; cannot load %q too", ncclLoad.path, library)
	}
	return ncclLoad.err
}

// NCCLLibrary is the file NCCL was loaded from ("" before OpenNCCL).
func NCCLLibrary() string {
	ncclLoad.Lock()
	defer ncclLoad.Unlock()
	return ncclLoad.path
}

// NCCL is one rank's NCCL communicator over the GPUs of an MPI world.
type NCCL struct {
	comm       C.stoke_nccl_comm
	rank, size int
}

// ncclRemoteError (nccl.h): a peer process exited or the network failed.
const ncclRemoteError = 6

// NCCLError is a failed NCCL call: its ncclResult_t, NCCL's string for
// it, and the communicator's last error message (ncclGetLastError, which
// names the peer that failed where NCCL knows it).
type NCCLError struct {
	Code   int
	String string
	Last   string
}

func (e *NCCLError) Error() string {
	s := fmt.Sprintf("NCCL error %d: %s", e.Code, e.String)
	if e.Last != "" {
		s += " (" + e.Last + ")"
	}
	return s
}

// Remote is true for ncclRemoteError: another rank's process exited, or
// the network between the ranks failed.
func (e *NCCLError) Remote() bool { return e.Code == ncclRemoteError }

func ncclError(r C.int) error {
	return &NCCLError{Code: int(r), String: C.GoString(C.stoke_nccl_error(r))}
}

func (n *NCCL) errorOf(r C.int) error {
	e := ncclError(r).(*NCCLError)
	if n.comm != nil {
		e.Last = strings.TrimSpace(C.GoString(C.stoke_nccl_last_error(n.comm)))
	}
	return e
}

// OpenNCCL makes the NCCL communicator of over's world: rank 0 draws the
// unique id, over broadcasts it, every rank joins with its rank. The CUDA
// context of this rank's device must be current on the calling thread
// (NCCL binds the communicator to it). library names the file or folder to
// load NCCL from; "" looks where NCCLCandidates says. Without a usable
// NCCL the error is a *NoNCCLError listing every place tried.
func OpenNCCL(over Comm, library string) (*NCCL, error) {
	if err := LoadNCCL(library); err != nil {
		return nil, err
	}
	var err error
	id := (*[NCCLIDBytes]byte)(C.calloc(NCCLIDBytes, 1))
	defer C.free(unsafe.Pointer(id))
	if over.Rank() == 0 {
		if r := C.stoke_nccl_unique_id(unsafe.Pointer(id)); r != 0 {
			err = &RankError{Rank: 0, Op: "ncclGetUniqueId", Err: ncclError(r)}
		}
	}
	// Broadcast even after a failure on rank 0, so that no rank waits for
	// an id forever; a zero id then fails everywhere.
	buf := make([]byte, NCCLIDBytes)
	copy(buf, id[:])
	if berr := over.BroadcastBytes(buf, 0); berr != nil {
		return nil, berr
	}
	if err != nil {
		return nil, err
	}
	copy(id[:], buf)
	n := &NCCL{rank: over.Rank(), size: over.Size()}
	var comm C.stoke_nccl_comm
	if r := C.stoke_nccl_init(&comm, C.int(n.size), unsafe.Pointer(id), C.int(n.rank)); r != 0 {
		return nil, &RankError{Rank: n.rank, Op: fmt.Sprintf("ncclCommInitRank (rank %d of %d)", n.rank, n.size), Err: ncclError(r)}
	}
	n.comm = comm
	return n, nil
}

func (n *NCCL) Rank() int { return n.rank }
func (n *NCCL) Size() int { return n.size }

// AllreduceSum enqueues, on stream, the in-place sum over all ranks of the
// count float32s at device address buf.
func (n *NCCL) AllreduceSum(buf uintptr, count int, stream uintptr) error {
	if r := C.stoke_nccl_allreduce_sum(C.uintptr_t(buf), C.size_t(count), n.comm, C.uintptr_t(stream)); r != 0 {
		return &RankError{Rank: n.rank, Op: fmt.Sprintf("ncclAllReduce of %d floats", count), Err: n.errorOf(r)}
	}
	return nil
}

// Broadcast enqueues, on stream, the copy of root's count float32s at
// device address buf into every rank's buf.
func (n *NCCL) Broadcast(buf uintptr, count, root int, stream uintptr) error {
	if r := C.stoke_nccl_broadcast(C.uintptr_t(buf), C.size_t(count), C.int(root), n.comm, C.uintptr_t(stream)); r != 0 {
		return &RankError{Rank: n.rank, Op: fmt.Sprintf("ncclBroadcast of %d floats from rank %d", count, root), Err: n.errorOf(r)}
	}
	return nil
}

// AsyncError is the communicator's asynchronous error
// (ncclCommGetAsyncError): a collective that failed on its stream after it
// was enqueued (a peer that died: ncclRemoteError) leaves its output
// unwritten and sets it. nil while none has failed. It is a host call that
// does not wait for the device.
func (n *NCCL) AsyncError() error {
	if n.comm == nil {
		return fmt.Errorf("rank %d: the NCCL communicator is closed", n.rank)
	}
	var e C.int
	if r := C.stoke_nccl_async_error(n.comm, &e); r != 0 {
		return &RankError{Rank: n.rank, Op: "ncclCommGetAsyncError", Err: n.errorOf(r)}
	}
	if e != 0 {
		return &RankError{Rank: n.rank, Op: "an NCCL collective on the stream", Err: n.errorOf(e)}
	}
	return nil
}

// Abort ends the communicator's uncompleted collectives, on this rank and
// on the others (ncclCommAbort), so that no rank waits for this one; the
// communicator is gone after it.
func (n *NCCL) Abort() {
	if n.comm == nil {
		return
	}
	C.stoke_nccl_abort(n.comm)
	n.comm = nil
}

// Close destroys the communicator.
func (n *NCCL) Close() error {
	if n.comm == nil {
		return nil
	}
	r := C.stoke_nccl_destroy(n.comm)
	n.comm = nil
	if r != 0 {
		return &RankError{Rank: n.rank, Op: "ncclCommDestroy", Err: ncclError(r)}
	}
	return nil
}
