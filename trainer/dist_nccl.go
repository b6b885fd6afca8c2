//go:build stokecuda && cgo && unix

package trainer

import (
	"errors"
	"fmt"
	"os"

	"stoke/config"
	"stoke/cudaops"
	"stoke/dist"
)

// train.dist nccl (and auto on --device cuda): the gradients stay on the
// GPU and NCCL sums them there (cudaops.NCCLSync), its unique id sent over
// the run's MPI world (dist.OpenNCCL), which keeps the host's collectives.
func init() { newDeviceSync = openNCCLSync }

// ncclLibraryEnv names the NCCL to load instead of looking where
// dist.NCCLCandidates says (a file or a folder; tests and odd installs).
const ncclLibraryEnv = "STOKE_NCCL_LIB"

type ncclSync struct {
	nccl *dist.NCCL
	comm dist.Comm
	cap  int
	s    *cudaops.NCCLSync
}

// openNCCLSync loads NCCL on every rank and agrees on the answer (auto
// falls back to MPI on all ranks unless NCCL loaded on all), then joins
// the communicator with the device's context current and installs the sync.
func openNCCLSync(comm dist.Comm, net Backend, cfg config.Config, required bool) (deviceSync, string, error) {
	b, ok := net.(*cudaops.Backend)
	if !ok {
		if required {
			return nil, "", fmt.Errorf("train.dist nccl: the model is not on --device cuda (%T), so NCCL has no gradients on a GPU to sum; use train.dist mpi", net)
		}
		return nil, "the model is not a CUDA one", nil
	}
	lib := os.Getenv(ncclLibraryEnv)
	loadErr := dist.LoadNCCL(lib)
	missing := []float64{0}
	if loadErr != nil {
		missing[0] = 1
	}
	if err := comm.AllreduceSumFloat64(missing); err != nil {
		return nil, "", fmt.Errorf("agreeing on NCCL: %w", err)
	}
	if missing[0] > 0 {
		if required {
			if loadErr != nil {
				return nil, "", fmt.Errorf("rank %d: %w", comm.Rank(), loadErr)
			}
			return nil, "", fmt.Errorf("train.dist nccl: NCCL did not load on %d of the %d ranks (their messages say where they looked); this rank loaded %s", int(missing[0]), comm.Size(), dist.NCCLLibrary())
		}
		return nil, fmt.Sprintf("%s does not load on %d of the %d ranks", dist.DefaultNCCLLibrary, int(missing[0]), comm.Size()), nil
	}
	ns := &ncclSync{comm: comm, cap: int(cfg.Train.DistBucketMB * (1 << 20))}
	err := b.WithContext(func() error {
		var err error
		ns.nccl, err = dist.OpenNCCL(comm, lib)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("train.dist %s: joining NCCL: %w", cfg.Train.Dist, err)
	}
	if err := ns.Hook(net); err != nil {
		ns.Close()
		return nil, "", err
	}
	return ns, "", nil
}

func (n *ncclSync) Name() string { return "NCCL (" + dist.NCCLLibrary() + ")" }
func (n *ncclSync) Len() int     { return n.s.Len() }
func (n *ncclSync) Floats() int  { return n.s.Floats() }
func (n *ncclSync) Steps() int   { return n.s.Steps() }

// Hook makes and installs a sync on net's gradients: each model has its
// own (its buckets and stream), all over the one communicator.
func (n *ncclSync) Hook(net Backend) error {
	b, ok := net.(*cudaops.Backend)
	if !ok {
		return fmt.Errorf("the rebuilt model is not a CUDA one (%T)", net)
	}
	s, err := b.NewNCCLSync(ncclComm{n.nccl}, n.total, n.cap)
	if err != nil {
		return err
	}
	n.s = s
	return nil
}

// total is the step's sample count summed over the ranks, on the host.
func (n *ncclSync) total(k int) (int, error) {
	v := []float64{float64(k)}
	if err := n.comm.AllreduceSumFloat64(v); err != nil {
		return 0, err
	}
	return int(v[0]), nil
}

func (n *ncclSync) Close() {
	if n.nccl != nil {
		n.nccl.Close()
		n.nccl = nil
	}
}

// ncclComm is dist.NCCL as cudaops takes it, with a dead peer's
// ncclRemoteError said as the MPI path says a rank's death.
type ncclComm struct{ *dist.NCCL }

func (c ncclComm) AllreduceSum(buf uintptr, count int, stream uintptr) error {
	return remote(c.NCCL.AllreduceSum(buf, count, stream))
}

func (c ncclComm) AsyncError() error { return remote(c.NCCL.AsyncError()) }

// remote adds, to an ncclRemoteError, what it means for the run.
func remote(err error) error {
	var ne *dist.NCCLError
	if err != nil && errors.As(err, &ne) && ne.Remote() {
		return fmt.Errorf("%w: another rank has died or its network failed; the job ends", err)
	}
	return err
}
