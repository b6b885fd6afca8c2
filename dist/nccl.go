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
#undef SYM
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
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// DefaultNCCLLibrary is the library OpenNCCL loads when none is named.
const DefaultNCCLLibrary = "libnccl.so.2"

// NCCLIDBytes is the size of ncclUniqueId.
const NCCLIDBytes = 128

var ncclLoad struct {
	sync.Mutex
	lib string
	err error
}

// NCCL is one rank's NCCL communicator over the GPUs of an MPI world.
type NCCL struct {
	comm       C.stoke_nccl_comm
	rank, size int
}

func ncclError(r C.int) error {
	return fmt.Errorf("NCCL error %d: %s", int(r), C.GoString(C.stoke_nccl_error(r)))
}

// OpenNCCL makes the NCCL communicator of over's world: rank 0 draws the
// unique id, over broadcasts it, every rank joins with its rank. The CUDA
// context of this rank's device must be current on the calling thread
// (NCCL binds the communicator to it). library "" = DefaultNCCLLibrary.
func OpenNCCL(over Comm, library string) (*NCCL, error) {
	if library == "" {
		library = DefaultNCCLLibrary
	}
	ncclLoad.Lock()
	if ncclLoad.lib == "" {
		cname := C.CString(library)
		if msg := C.stoke_nccl_load(cname); msg != nil {
			ncclLoad.err = fmt.Errorf("dist: NCCL is not available: %s could not be loaded (%s); install NCCL 2 (e.g. NVIDIA's libnccl2 package) or use train.dist mpi", library, C.GoString(msg))
		}
		C.free(unsafe.Pointer(cname))
		ncclLoad.lib = library
	}
	err := ncclLoad.err
	if err == nil && ncclLoad.lib != library {
		err = fmt.Errorf("dist: NCCL was loaded from %s already; cannot load %s too", ncclLoad.lib, library)
	}
	ncclLoad.Unlock()
	if err != nil {
		return nil, err
	}
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
		return &RankError{Rank: n.rank, Op: fmt.Sprintf("ncclAllReduce of %d floats", count), Err: ncclError(r)}
	}
	return nil
}

// Broadcast enqueues, on stream, the copy of root's count float32s at
// device address buf into every rank's buf.
func (n *NCCL) Broadcast(buf uintptr, count, root int, stream uintptr) error {
	if r := C.stoke_nccl_broadcast(C.uintptr_t(buf), C.size_t(count), C.int(root), n.comm, C.uintptr_t(stream)); r != 0 {
		return &RankError{Rank: n.rank, Op: fmt.Sprintf("ncclBroadcast of %d floats from rank %d", count, root), Err: ncclError(r)}
	}
	return nil
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
