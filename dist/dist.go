// Package dist is stoke's communicator for data-parallel training: a rank
// and a world size, sums of float32 (and float64) buffers over all ranks,
// broadcast and barrier — the few collectives that data parallelism needs
// (PyTorch DDP and Horovod use the same ones) — over the engines clusters
// already run: MPI between processes and nodes (Open MPI's libmpi, loaded at
// run time, mpi.go) and NCCL between GPUs (libnccl.so.2, loaded at run time
// in the stokecuda build, nccl.go). No collective algorithm is written
// here: the engines own those.
//
// Single is the one-process world; Local is a world of goroutines in one
// process, for tests of what sits above a communicator (the trainer's
// gradient averaging) without MPI.
//
// Which world a process is in comes from its launcher (Detect): mpirun (and
// srun with PMIx) for MPI; torchrun's variables are read too and named in
// the messages.
package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Comm is one rank's view of the world. Collectives must be called in the
// same order on every rank; a Comm is used from one goroutine at a time,
// except that a Request may be waited on from another.
type Comm interface {
	Rank() int
	Size() int
	// AllreduceSum replaces buf, on every rank, with the element-wise sum of
	// every rank's buf.
	AllreduceSum(buf []float32) error
	// StartAllreduceSum begins AllreduceSum and returns at once; buf must
	// not be touched until the Request's Wait has returned.
	StartAllreduceSum(buf []float32) (Request, error)
	// AllreduceSumFloat64 is AllreduceSum on float64s (epoch sums, counts).
	AllreduceSumFloat64(buf []float64) error
	// Broadcast copies root's buf into every other rank's buf.
	Broadcast(buf []float32, root int) error
	// BroadcastBytes is Broadcast on bytes (NCCL's unique id, 128 of them).
	BroadcastBytes(buf []byte, root int) error
	Barrier() error
	// Name says which engine this is ("single", "mpi (Open MPI ...)").
	Name() string
	// Close ends this rank's part in the world, cleanly (every collective
	// done); after a failure use Abort.
	Close() error
	// Abort ends the whole job (every rank) after a failure on this rank;
	// it prints reason, naming the rank, before it does.
	Abort(reason error)
}

// Request is a collective in flight.
type Request interface {
	// Wait returns when the collective is done, or with an error naming
	// the rank and the collective when it failed or timed out.
	Wait() error
}

// Kinds of train.dist.
const (
	KindAuto = "auto" // MPI when launched by mpirun/srun with more than one rank, else none (the trainer adds NCCL on cuda)
	KindNone = "none" // one process
	KindMPI  = "mpi"
	KindNCCL = "nccl" // the MPI world, with the gradients summed on the GPUs by NCCL (OpenNCCL, the trainer's part)
)

// Options tune a communicator.
type Options struct {
	// Timeout bounds every collective: one not done by then fails, naming
	// this rank and the collective, so that a dead or stuck rank ends the
	// job instead of hanging it. 0 = DefaultTimeout.
	Timeout time.Duration
	// Library overrides the shared library to load (tests); "" = the
	// engine's usual name (libmpi.so.40).
	Library string
}

// DefaultTimeout is long enough for a checkpoint or a slow evaluation on
// one rank while the others wait, short enough to end a dead job in time.
const DefaultTimeout = 5 * time.Minute

// Launch is what a launcher told this process about its world.
type Launch struct {
	Launcher             string // "mpirun", "srun", "torchrun" or "" (none)
	Rank, Size           int
	LocalRank, LocalSize int
	MasterAddr           string // torchrun's MASTER_ADDR:MASTER_PORT
}

// Detect reads the launcher's environment variables: Open MPI's
// OMPI_COMM_WORLD_*, PMIx's PMIX_RANK with Slurm's SLURM_NTASKS (srun), or
// torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT. Without any, it is a world of one.
func Detect(getenv func(string) string) (Launch, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	num := func(name string, def int) (int, error) {
		s := getenv(name)
		if s == "" {
			return def, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("dist: environment variable %s=%q is not a rank count", name, s)
		}
		return v, nil
	}
	var l Launch
	var errs []error
	get := func(dst *int, name string, def int) {
		v, err := num(name, def)
		errs = append(errs, err)
		*dst = v
	}
	switch {
	case getenv("OMPI_COMM_WORLD_SIZE") != "":
		l.Launcher = "mpirun"
		get(&l.Rank, "OMPI_COMM_WORLD_RANK", 0)
		get(&l.Size, "OMPI_COMM_WORLD_SIZE", 1)
		get(&l.LocalRank, "OMPI_COMM_WORLD_LOCAL_RANK", 0)
		get(&l.LocalSize, "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
	case getenv("PMIX_RANK") != "" && getenv("SLURM_NTASKS") != "":
		l.Launcher = "srun"
		get(&l.Rank, "PMIX_RANK", 0)
		get(&l.Size, "SLURM_NTASKS", 1)
		get(&l.LocalRank, "SLURM_LOCALID", 0)
		get(&l.LocalSize, "SLURM_NTASKS_PER_NODE", 1)
	case getenv("WORLD_SIZE") != "" && getenv("RANK") != "":
		l.Launcher = "torchrun"
		get(&l.Rank, "RANK", 0)
		get(&l.Size, "WORLD_SIZE", 1)
		get(&l.LocalRank, "LOCAL_RANK", 0)
		get(&l.LocalSize, "LOCAL_WORLD_SIZE", 1)
		if a := getenv("MASTER_ADDR"); a != "" {
			l.MasterAddr = a + ":" + getenv("MASTER_PORT")
		}
	default:
		return Launch{Size: 1, LocalSize: 1}, nil
	}
	if err := errors.Join(errs...); err != nil {
		return l, err
	}
	if l.Size < 1 || l.Rank >= l.Size {
		return l, fmt.Errorf("dist: %s says rank %d of %d ranks", l.Launcher, l.Rank, l.Size)
	}
	return l, nil
}

// Open returns the communicator kind names for the world the launcher
// describes. KindNCCL opens the MPI world too: NCCL's unique id travels
// over it, and the trainer sums the gradients on the GPUs with NCCL
// (OpenNCCL, the stokecuda build) while MPI keeps the host's few
// collectives (the settings' agreement, the epoch's figures).
func Open(kind string, l Launch, opt Options) (Comm, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	switch kind {
	case KindNone:
		return Single{}, nil
	case KindAuto:
		switch {
		case l.Size <= 1:
			return Single{}, nil
		case l.Launcher == "torchrun":
			return nil, torchrunError(l)
		}
		return OpenMPI(opt)
	case KindMPI, KindNCCL:
		if l.Launcher == "torchrun" && l.Size > 1 {
			return nil, torchrunError(l)
		}
		return OpenMPI(opt)
	}
	return nil, fmt.Errorf("train.dist: unknown kind %q (auto, none, mpi or nccl)", kind)
}

// torchrunError: torchrun starts processes but no MPI world among them, and
// its rendezvous (a TCP store at MASTER_ADDR) is PyTorch's own; MPI's
// launchers start the world both engines here need.
func torchrunError(l Launch) error {
	return fmt.Errorf("dist: launched by torchrun (RANK=%d, WORLD_SIZE=%d, LOCAL_RANK=%d, MASTER_ADDR=%s), whose rendezvous stoke does not speak; launch the same command with `mpirun -np %d` (or srun), which starts the MPI world that both train.dist mpi and nccl use",
		l.Rank, l.Size, l.LocalRank, l.MasterAddr, l.Size)
}

// RankError is a failure on one rank, named.
type RankError struct {
	Rank int
	Op   string // the collective, e.g. "allreduce of 24586 floats"
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %s: %v", e.Rank, e.Op, e.Err) }
func (e *RankError) Unwrap() error { return e.Err }

// ErrTimeout is wrapped by a collective that did not finish within
// Options.Timeout.
var ErrTimeout = errors.New("timed out: another rank has died, is stuck, or is far behind")
