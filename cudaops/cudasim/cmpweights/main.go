// Command cmpweights compares two runs' final weights (the model.safetensors
// their latest.json names): for each tensor, the largest difference relative
// to the largest weight of the second run's tensor; and their last epoch's
// train loss (metrics.jsonl). scripts/gpu-sim.sh uses it to check a --device
// cuda run under the stand-in against a --device cpu run.
//
//	go run ./cudaops/cudasim/cmpweights [-tol 1e-4] [-loss-tol 1] RUN_A RUN_B
//
// It prints both figures and exits 1 when either is above its tolerance.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"stoke/model"
)

func weights(run string) ([]model.NamedTensor, error) {
	b, err := os.ReadFile(filepath.Join(run, "latest.json"))
	if err != nil {
		return nil, err
	}
	var latest struct{ Checkpoint string }
	if err := json.Unmarshal(b, &latest); err != nil {
		return nil, fmt.Errorf("%s/latest.json: %v", run, err)
	}
	ts, _, err := model.ReadSafetensors(filepath.Join(run, latest.Checkpoint, "model.safetensors"))
	return ts, err
}

// lastLoss is the train loss of the run's last epoch.
func lastLoss(run string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var m struct {
		TrainLoss float64 `json:"train_loss"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		return 0, fmt.Errorf("%s/metrics.jsonl: %v", run, err)
	}
	return m.TrainLoss, nil
}

func main() {
	tol := flag.Float64("tol", 1e-4, "largest relative difference of the weights allowed")
	lossTol := flag.Float64("loss-tol", 1, "largest relative difference of the last train loss allowed")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: cmpweights [-tol 1e-4] RUN_A RUN_B")
		os.Exit(2)
	}
	a, err1 := weights(flag.Arg(0))
	b, err2 := weights(flag.Arg(1))
	for _, err := range []error{err1, err2} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "cmpweights:", err)
			os.Exit(2)
		}
	}
	if len(a) != len(b) {
		fmt.Fprintf(os.Stderr, "cmpweights: %d tensors against %d\n", len(a), len(b))
		os.Exit(1)
	}
	worst, worstName := 0.0, ""
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Data) != len(b[i].Data) {
			fmt.Fprintf(os.Stderr, "cmpweights: tensor %d: %s (%d) against %s (%d)\n", i, a[i].Name, len(a[i].Data), b[i].Name, len(b[i].Data))
			os.Exit(1)
		}
		var diff, scale float64
		for k, v := range b[i].Data {
			diff = math.Max(diff, math.Abs(float64(a[i].Data[k])-float64(v)))
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		rel := diff / math.Max(scale, 1e-30)
		if math.IsNaN(rel) || rel > worst || worstName == "" {
			worst, worstName = rel, a[i].Name
		}
	}
	la, err1 := lastLoss(flag.Arg(0))
	lb, err2 := lastLoss(flag.Arg(1))
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "cmpweights:", err)
		os.Exit(2)
	}
	lossRel := math.Abs(la-lb) / math.Abs(lb)
	fmt.Printf("weights: largest relative difference %.2e (%s), %d tensors; last train loss %.4f vs %.4f (%.2e relative)\n",
		worst, worstName, len(a), la, lb, lossRel)
	if !(worst <= *tol) || !(lossRel <= *lossTol) {
		os.Exit(1)
	}
}
