// A CPU stand-in for libnccl.so.2, for testing stoke's NCCL binding
// (dist/nccl.go) on machines without a GPU: collectives in a world of one
// rank whose "device memory" is host memory; communicators of more ranks
// can be made (to test the id's way over MPI) but not used. It checks what a real NCCL would need
// (the id it made, float32 and sum, rank 0 of 1) and fails otherwise with
// an error string of its own, so that the binding's error path is exercised too.
#include <stddef.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int rank, n; } comm_t;
static comm_t the_comm;
static const char magic[] = "stoke-nccl-standin";
static const char *last_error = "no error";

static int fail(const char *why) { last_error = why; return 4; } // ncclInvalidArgument

int ncclGetUniqueId(ncclUniqueId *id) {
	memset(id, 0, sizeof *id);
	memcpy(id->internal, magic, sizeof magic);
	id->internal[127] = 0x5a;
	return 0;
}

int ncclCommInitRank(void **comm, int n, ncclUniqueId id, int rank) {
	if (memcmp(id.internal, magic, sizeof magic) != 0 || id.internal[127] != 0x5a) return fail("stand-in: the unique id is not the one ncclGetUniqueId made (passed by value, 128 bytes)");
	if (n < 1 || rank < 0 || rank >= n) return fail("stand-in: rank out of range");
	the_comm.rank = rank;
	the_comm.n = n;
	*comm = &the_comm;
	return 0;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, void *comm, void *stream) {
	if (comm != &the_comm) return fail("stand-in: unknown communicator");
	if (the_comm.n != 1) return fail("stand-in: collectives need a world of one rank");
	if (dtype != 7) return fail("stand-in: want ncclFloat32 (7)");
	if (op != 0) return fail("stand-in: want ncclSum (0)");
	(void)stream;
	memmove(recv, send, count * 4); // the sum over one rank
	return 0;
}

int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, void *comm, void *stream) {
	if (comm != &the_comm) return fail("stand-in: unknown communicator");
	if (dtype != 7) return fail("stand-in: want ncclFloat32 (7)");
	if (the_comm.n != 1) return fail("stand-in: collectives need a world of one rank");
	if (root != 0) return fail("stand-in: root must be rank 0 of 1");
	(void)stream;
	memmove(recv, send, count * 4);
	return 0;
}

int ncclCommDestroy(void *comm) { return comm == &the_comm ? 0 : fail("stand-in: unknown communicator"); }

const char *ncclGetErrorString(int r) { return r == 0 ? "no error" : last_error; }
// ncclCommGetAsyncError: nothing here runs asynchronously, so never an error.
int ncclCommGetAsyncError(void *comm, int *e) {
	if (!e) return fail("stand-in: NULL result pointer");
	*e = 0;
	return comm == &the_comm ? 0 : fail("stand-in: unknown communicator");
}
int ncclCommAbort(void *comm) { return comm == &the_comm ? 0 : fail("stand-in: unknown communicator"); }
