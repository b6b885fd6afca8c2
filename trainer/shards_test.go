package trainer

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
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
				t.Fatalf("%s: %s[%d] = %v, want %v", what, want[i].Name, j, got[i].Data[j], want[i].Data[j])
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
		c.Data.Workers = config.Workers(workers)
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

// TestBrokenShardMemberFailsOrIsSkipped: an image member without its .cls
// stops the run, naming shard and member, under bad_images: fail; under
// skip the run trains on the rest and says what it left out.
func TestBrokenShardMemberFailsOrIsSkipped(t *testing.T) {
	shards := packedTiny(t)
	img, err := os.ReadFile(filepath.Join(shards, "train", "000000.tar"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "stray.jpg", Mode: 0o644, Size: int64(len(img))})
	tw.Write(img)
	tw.Close()
	bad := filepath.Join(shards, "train", "zz.tar")
	if err := os.WriteFile(bad, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"fail", "skip"} {
		c := tinyConfig(t)
		c.Data.Root, c.Data.BadImages, c.Train.Epochs = shards, policy, 1
		out := new(bytes.Buffer)
		_, err := Run(context.Background(), c, Options{Out: out})
		switch {
		case policy == "fail" && (err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `member "stray.jpg": no stray.cls member`)):
			t.Errorf("bad_images fail: %v; want an error naming %s and stray.jpg", err, bad)
		case policy == "skip" && err != nil:
			t.Errorf("bad_images skip: %v", err)
		case policy == "skip" && !strings.Contains(out.String(), "bad_images skip: 1 broken shard member left out:\n  data: shard "+bad+`: member "stray.jpg"`):
			t.Errorf("bad_images skip printed\n%s", out)
		}
	}
}

// TestSequentialModeTrains: data.shuffle_buffer on shards trains to the
// same weights with 0 and 2 workers, and interrupted and resumed; on an
// ImageFolder it is refused.
func TestSequentialModeTrains(t *testing.T) {
	shards := packedTiny(t)
	run := func(root string, workers int) (config.Config, error) {
		c := tinyConfig(t)
		c.Train.Epochs, c.Data.Workers, c.Data.ShuffleBuf = 1, config.Workers(workers), 4
		if root != "" {
			c.Data.Root = root
		}
		_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		return c, err
	}
	a, err := run(shards, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run(shards, 2)
	if err != nil {
		t.Fatal(err)
	}
	sameWeights(t, "sequential mode, 2 workers against 0", lastWeights(t, b.Train.Out), lastWeights(t, a.Train.Out))

	c := tinyConfig(t) // interrupted after 2 of its 4 steps, and resumed
	c.Data.Root, c.Train.Epochs, c.Data.ShuffleBuf = shards, 1, 4
	interruptAfter(t, "sequential mode", c, Options{}, 2)
	c.Train.Resume = c.Train.Out
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	sameWeights(t, "sequential mode, interrupted and resumed", lastWeights(t, c.Train.Out), lastWeights(t, b.Train.Out))
	if _, err := run("", 0); err == nil || !strings.Contains(err.Error(), "data.shuffle_buffer") {
		t.Errorf("sequential mode on the ImageFolder: %v, want a refusal naming data.shuffle_buffer", err)
	}
}
