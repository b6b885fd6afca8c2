package main

import (
	"fmt"
	"time"

	"stoke/config"
	"stoke/dist"
)

// openComm joins the world train.dist and the launcher describe: one
// process, or one rank of an MPI job started by mpirun or srun.
func openComm(cfg config.Config) (dist.Comm, error) {
	l, err := dist.Detect(nil)
	if err != nil {
		return nil, err
	}
	c, err := dist.Open(cfg.Train.Dist, l, dist.Options{Timeout: time.Duration(cfg.Train.DistTimeout * float64(time.Second))})
	if err != nil {
		return nil, fmt.Errorf("train.dist %s: %w", cfg.Train.Dist, err)
	}
	if l.Size > 1 && c.Size() == 1 && cfg.Train.Dist == dist.KindNone {
		return nil, fmt.Errorf("train.dist none: %s started %d ranks, and with train.dist none each would train the whole run alone, into the same run folder; use train.dist mpi (or auto) to train them as one run, or start one process without %s", l.Launcher, l.Size, l.Launcher)
	}
	if l.Launcher != "" && l.Size != c.Size() {
		c.Close()
		return nil, fmt.Errorf("train.dist %s: %s started %d ranks but the MPI world has %d: is the launcher's MPI the Open MPI that %s is?", cfg.Train.Dist, l.Launcher, l.Size, c.Size(), dist.DefaultMPILibrary)
	}
	return c, nil
}
