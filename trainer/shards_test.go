package trainer

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// packedTiny packs the tiny dataset into shards of about 4 KB (several
// shards a split, so that batches cross shards) and returns their folder.
func packedTiny(t *testing.T) string {
	t.Helper()
	root, err := tinyDataset()
	if err != nil {
		t.Fatal(err)
	}
	train, val, err := data.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "shards")
	st, err := data.Pack(context.Background(), train, val, out, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	if st.Shards[0] < 2 {
		t.Fatalf("the tiny set packed into %d train shard: want several", st.Shards[0])
	}
	return out
}

func sameWeights(t *testing.T, what string, got, want []model.NamedTensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for i := range want {
		for j := range want[i].Data {
			if got[i].Data[j] != want[i].Data[j] {
				t.Fatalf("%s: %s[%d] = %v, the ImageFolder gave %v", what, want[i].Name, j, got[i].Data[j], want[i].Data[j])
			}
		}
	}
}

// TestShardsTrainLikeTheirImageFolder: one epoch from `train pack`'s
// shards with 2 workers ends with the weights, bit for bit, of one epoch
// from the ImageFolder they came from with 0 workers; and 2 ranks from the
// shards end where 2 ranks from the ImageFolder do.
func TestShardsTrainLikeTheirImageFolder(t *testing.T) {
	shards := packedTiny(t)
	epoch := func(root string, workers int) config.Config {
		c := tinyConfig(t)
		c.Train.Epochs = 1
		c.Data.Workers = workers
		if root != "" {
			c.Data.Root = root
		}
		return c
	}
	folder := epoch("", 0)
	if _, err := Run(context.Background(), folder, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	fromShards := epoch(shards, 2)
	out := new(bytes.Buffer)
	if _, err := Run(context.Background(), fromShards, Options{Out: out}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameWeights(t, "shards, 2 workers", lastWeights(t, fromShards.Train.Out), lastWeights(t, folder.Train.Out))

	par := func(root string) config.Config {
		c := epoch(root, 1)
		c.Data.BatchSize = 4
		runRanks(t, 2, c, nil)
		return c
	}
	a, b := par(""), par(shards)
	sameWeights(t, "2 ranks from shards", lastWeights(t, b.Train.Out), lastWeights(t, a.Train.Out))
}
