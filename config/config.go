// Package config is stoke's run configuration: a YAML file of settings,
// overridden by command-line flags, checked field by field, and written back
// out resolved at the start of every run.
//
// Every leaf setting has a dotted path ("data.batch_size") that is its flag
// name too (--data.batch_size=32); the common ones also have short flags
// (--batch-size). Unknown keys, wrong types and out-of-range values are
// errors that name the field.
package config

import (
	"stoke/data"
	"stoke/model"
)

// Config is everything a run needs. The zero value is not valid: start from
// Default() or Load().
type Config struct {
	Data    Data    `yaml:"data"`
	Augment Augment `yaml:"augment"`
	Model   Model   `yaml:"model"`
	Optim   Optim   `yaml:"optim"`
	Train   Train   `yaml:"train"`
	Cuda    Cuda    `yaml:"cuda"`
}

// Data says where images come from and how the loader runs.
type Data struct {
	Root       string    `yaml:"root" help:"ImageFolder dataset: ROOT/train/<class>/*.jpg and ROOT/val/<class>/*.jpg, or tar shards in the WebDataset layout (ROOT/train/*.tar and ROOT/val/*.tar, as train pack writes them: docs/shards.md); empty = the generated dataset described by data.synthetic, made on first use in the user cache folder" flag:"data"`
	ImageSize  int       `yaml:"image_size" help:"side in pixels of the square images fed to the model (training: every epoch unless data.progressive is on; evaluation: unless data.eval_size is set)" flag:"image-size"`
	EvalSize   int       `yaml:"eval_size" help:"side in pixels of the evaluation images (resize the shorter side to eval_size/augment.eval_resize_ratio, centre crop); 0 = data.image_size" flag:"eval-size"`
	SizeRamp   SizeRamp  `yaml:"progressive"`
	BatchSize  int       `yaml:"batch_size" help:"images per training step" flag:"batch-size"`
	Workers    Workers   `yaml:"workers" help:"loader goroutines (PyTorch num_workers); 0 = load inline in the training goroutine; auto = load the first steps inline, measure what a worker makes against what the step takes, and pick the count (docs/data.md)" flag:"workers"`
	Prefetch   int       `yaml:"prefetch" help:"batches in flight per worker (PyTorch prefetch_factor)" flag:"prefetch"`
	PinMemory  bool      `yaml:"pin_memory" help:"batch buffers in page-locked host memory (acts on the cuda device only)" flag:"pin-memory"`
	Shuffle    bool      `yaml:"shuffle" help:"reshuffle the training set every epoch"`
	DropLast   bool      `yaml:"drop_last" help:"drop the last training batch when it is short"`
	BadImages  string    `yaml:"bad_images" help:"what an undecodable image (or a broken tar shard member) does: fail (stop with an error naming the file) or skip (count and list it)"`
	MaxPixels  int       `yaml:"max_pixels" help:"refuse images larger than this many pixels before decoding them"`
	MaxDecode  int       `yaml:"max_decode_bytes" help:"memory in bytes one image's decode may take, estimated from its header (file, decoded pixels, RGB copy); an image over it is refused like a bad one. The loader then holds at most workers x (this + 32 MiB) besides its batch buffers"`
	BatchDType string    `yaml:"batch_dtype" help:"batch element type: auto (uint8 where the device normalizes batches itself, else float32), float32 (normalized by the workers) or uint8 (4x fewer bytes; normalized by the device, or before the step on the cpu)"`
	Decoder    string    `yaml:"decoder" help:"JPEG decoder: auto (libjpeg-turbo when libturbojpeg.so.0 is installed, else Go's image/jpeg), turbo or go"`
	Format     string    `yaml:"format" help:"dataset layout: auto (tar shards when ROOT/train holds .tar files, else an ImageFolder), folder (an ImageFolder; .tar files are not images and are left out) or shards (ROOT/train/*.tar and ROOT/val/*.tar)"`
	ShuffleBuf int       `yaml:"shuffle_buffer" help:"0 = each epoch a permutation of the whole training set; N > 0 = sequential mode for tar shards on storage where random reads are slow: shards in a shuffled order, each read front to back through a buffer of N samples drawn at random (docs/shards.md says what it gives up)"`
	Synthetic  Synthetic `yaml:"synthetic"`
	CacheDir   string    `yaml:"cache_dir" help:"where generated datasets are kept; empty = $XDG_CACHE_HOME/stoke (or ~/.cache/stoke)"`
}

// Synthetic describes the generated dataset used when data.root is empty.
type Synthetic struct {
	Classes int    `yaml:"classes" help:"classes of the generated dataset"`
	Train   int    `yaml:"train" help:"training images per class"`
	Val     int    `yaml:"val" help:"validation images per class"`
	Size    int    `yaml:"size" help:"side in pixels of the generated JPEGs"`
	Seed    uint64 `yaml:"seed" help:"seed of the generated dataset"`
}

// Augment is the training and evaluation transform.
type Augment struct {
	Scale           []float64 `yaml:"scale" help:"RandomResizedCrop area range, two numbers in (0,1]"`
	Ratio           []float64 `yaml:"ratio" help:"RandomResizedCrop aspect-ratio range, two numbers > 0"`
	HFlip           float64   `yaml:"hflip" help:"probability of a horizontal flip"`
	Brightness      float64   `yaml:"brightness" help:"colour jitter: brightness factor drawn from [1-b, 1+b] (torchvision meaning)"`
	Contrast        float64   `yaml:"contrast" help:"colour jitter: contrast factor drawn from [1-c, 1+c]"`
	Saturation      float64   `yaml:"saturation" help:"colour jitter: saturation factor drawn from [1-s, 1+s]"`
	Mean            []float64 `yaml:"mean" help:"per-channel normalisation mean (RGB)"`
	Std             []float64 `yaml:"std" help:"per-channel normalisation std (RGB)"`
	EvalResizeRatio float64   `yaml:"eval_resize_ratio" help:"evaluation: resize the shorter side to the eval size (data.eval_size, else data.image_size) / ratio, then centre-crop"`
}

// Model is the network's shape; its input size and class count come from data.
type Model struct {
	Arch string           `yaml:"arch" help:"cnn (the conv blocks of model.conv); torchvision's ResNets, with model.stem: resnet18 or resnet34 (BasicBlocks), resnet50, resnet101, resnet152, wide_resnet50_2 or wide_resnet101_2 (Bottlenecks, the stride on the 3x3 conv), resnext50_32x4d or resnext101_32x8d (Bottlenecks with the 3x3 conv in 32 groups); resnet20, resnet32 or resnet56 (He et al.'s CIFAR ResNets, projection shortcuts); names and layouts of the weights are torchvision's"`
	Stem string           `yaml:"stem" help:"torchvision's ResNets' stem (resnet18 to resnet152, wide_resnet): imagenet (7x7 stride-2 conv and 3x3 stride-2 max-pool, for ~224 px) or cifar (3x3 stride-1 conv, no max-pool, for ~32 px); the CIFAR ResNets always use the cifar stem"`
	Conv []model.ConvSpec `yaml:"conv" help:"model.arch cnn: conv blocks (at most 256), each {channels, kernel (odd, at most the side of its input), pool}; then global average pool and a linear head"`
	// ZeroInitResidual is torchvision's zero_init_residual (model.Options).
	ZeroInitResidual bool `yaml:"zero_init_residual" help:"the ResNets: start each residual block's last BatchNorm weight (bn2 of a BasicBlock, bn3 of a Bottleneck) at 0, so that each block starts as its shortcut (torchvision's zero_init_residual; Goyal et al. 2017)"`
}

// Optim is the optimizer, the loss's label smoothing and the
// learning-rate schedule.
type Optim struct {
	Optimizer        string    `yaml:"optimizer" help:"sgd (torch.optim.SGD) or adamw (torch.optim.AdamW: decoupled weight decay)"`
	LR               float64   `yaml:"lr" help:"peak learning rate" flag:"lr"`
	Momentum         float64   `yaml:"momentum" help:"SGD momentum"`
	Nesterov         bool      `yaml:"nesterov" help:"SGD: Nesterov momentum (needs momentum > 0)"`
	Betas            []float64 `yaml:"betas" help:"AdamW: the two moment decay rates, each in [0,1)"`
	Eps              float64   `yaml:"eps" help:"AdamW: added to the denominator"`
	WeightDecay      float64   `yaml:"weight_decay" help:"weight decay: L2 added to the gradient (sgd) or decoupled, w -= lr*wd*w (adamw)"`
	DecayNormAndBias bool      `yaml:"decay_norm_and_bias" help:"false: no weight decay on BatchNorm weights and biases or on any bias (torchvision's norm_weight_decay 0)"`
	LabelSmoothing   float64   `yaml:"label_smoothing" help:"CrossEntropyLoss label_smoothing in [0,1): the target is (1-e)*onehot + e/classes"`
	WarmupEpochs     float64   `yaml:"warmup_epochs" help:"linear warm-up from 0 to lr over this many epochs"`
	Schedule         string    `yaml:"schedule" help:"after warm-up: cosine (to min_lr at the last step), step (times gamma every step_epochs) or multistep (times gamma at each of milestones)"`
	MinLR            float64   `yaml:"min_lr" help:"learning rate at the end of the cosine decay"`
	StepEpochs       int       `yaml:"step_epochs" help:"schedule step: epochs between decays"`
	Milestones       []int     `yaml:"milestones" help:"schedule multistep: the epochs at which the learning rate is multiplied by gamma, increasing"`
	Gamma            float64   `yaml:"gamma" help:"schedule step and multistep: the factor of each decay"`
}

// Train is the loop: how long, where, and where results go.
type Train struct {
	Epochs      int    `yaml:"epochs" help:"training epochs" flag:"epochs"`
	Device      string `yaml:"device" help:"cpu or cuda (cuda needs a build with -tags stokecuda, see docs/cuda.md)" flag:"device"`
	NonBlocking bool   `yaml:"non_blocking" help:"asynchronous host-to-device copies on a copy stream (acts on the cuda device only)" flag:"non-blocking"`
	Seed        uint64 `yaml:"seed" help:"seed of weights, shuffling and augmentation" flag:"seed"`
	Out         string `yaml:"out" help:"run folder: resolved config, metrics.jsonl, checkpoints" flag:"out"`
	Resume      string `yaml:"resume" help:"continue from a run folder or checkpoint folder" flag:"resume"`
	Threads     int    `yaml:"threads" help:"OS threads for Go code (GOMAXPROCS), at most 1024; 0 = all cores" flag:"threads"`
	Progress    string `yaml:"progress" help:"auto (a live bar on a terminal; plain lines otherwise, and on the ranks of an mpirun or srun job, whose terminal may be a log), bar, plain (a few lines an epoch, no escape codes) or none (nothing within an epoch); every mode prints the epoch lines"`
	KeepCkpts   int    `yaml:"keep_checkpoints" help:"per-epoch checkpoints kept in the run folder (the newest always is)"`
	// What a diverging loss does (trainer/divergence.go).
	OnDivergence string `yaml:"on_divergence" help:"when the training loss diverges (far above its running minimum, or back at chance, ln(classes), after having been well below): auto (stop, after a checkpoint of the last state before the divergence), stop (stop at once; the checkpoints written so far are kept) or warn (say so and train on); the message names the step and the learning rate"`
	Trace        string `yaml:"trace" help:"write a timeline of the run (loader workers, waits, steps) to this file, in Chrome trace-event JSON for https://ui.perfetto.dev; relative to the run folder"`
	// Data-parallel training (docs/distributed.md).
	Dist         string  `yaml:"dist" help:"data-parallel training: auto (when started by mpirun or srun with several ranks: nccl on --device cuda where libnccl.so.2 loads, else mpi; with one rank none), none, mpi (Open MPI, loaded at run time; on --device cuda it sums host copies of the gradients) or nccl (--device cuda only: the gradients stay on the GPUs and NCCL sums them there, its id sent over MPI); data.batch_size is per rank" flag:"dist"`
	DistTimeout  float64 `yaml:"dist_timeout" help:"seconds a collective may take before the job ends, naming the rank that waited (a dead or stuck rank)"`
	DistBucketMB float64 `yaml:"dist_bucket_mb" help:"gradients are summed across ranks in buckets of about this many MB, each started as soon as backward has produced it (PyTorch DDP's bucket_cap_mb)"`
	// The precision of the conv and linear GEMMs (docs/config.md "Precision").
	Precision string `yaml:"precision" help:"fp32, tf32 (conv and linear GEMM inputs rounded to TF32, as PyTorch's allow_tf32) or bf16 (rounded to bfloat16, as torch.autocast); the sums, BatchNorm, the loss, the optimizer, the weights and checkpoints stay fp32. fp32 is the default on every device: on the cpu it is the exact reference (its bf16 runs on the VDPBF16PS kernels on an AMD CPU with AVX512_BF16, within float32 summation of the reference; STOKE_GEMM_BF16 overrides), and on cuda tf32 and bf16 are cuBLAS's (or our own GEMM's, cuda.gemm own) rounding of the same inputs. A resumed run keeps its precision" flag:"precision"`
	// Winograd's F(2x2, 3x3) for the cpu's 3x3 convs (docs/config.md "Precision").
	Winograd bool `yaml:"winograd" help:"the cpu device's 3x3 stride-1 convs of the ResNets (forward, input gradient and filter gradient) by Winograd's F(2x2, 3x3) where it is faster (32 channels and more in and out: resnet18 but its stem, resnet20 but its first stage): 2.25 times fewer multiply-adds, the same sums with a different float32 rounding (within a stated bound of the exact result), so not the bits of the default GEMM; fp32 only (tf32 and bf16 keep their GEMMs); acts on the cpu device only" flag:"winograd"`
}

// Cuda is the GPU engine's own settings: they act on --device cuda only
// (docs/cuda.md).
type Cuda struct {
	Gemm   string `yaml:"gemm" help:"the GPU engine's matrix products (every conv and linear layer, forward and backward; acts on the cuda device only): auto (cuBLAS when it loads, else our own SGEMM, and the run says where it looked), cublas (cuBLAS, or stop with the places it looked) or own (our own SGEMM kernel: the fallback and the reference)"`
	Graphs string `yaml:"graphs" help:"CUDA Graphs for the training step (acts on the cuda device only): auto (after the first step, each step is captured once per input slot and batch size and then replayed with one launch; data-parallel steps, which wait for the host, and a step whose capture the driver refuses launch kernel by kernel, and the run says why), on (as auto, but a refused capture stops the run) or off (every kernel launched every step); the weights are the same either way"`
	Cublas string `yaml:"cublas" help:"where cuBLAS is (acts on the cuda device only): a libcublas.so.N file, or a folder holding libcublas.so.13, .12 or .11; empty = search the library path, the driver's folder, the CUDA toolkit's and Python environments' nvidia/*/lib folders (docs/cuda.md)"`
}

// Default is the configuration every file and flag starts from: the
// quickstart (configs/quickstart.yaml holds these same values, with
// train.out runs/quickstart; a test keeps the two in step), a small CNN on
// the generated dataset, on the CPU. docs/config.md shows these values.
// One set of defaults: a file that leaves a setting out gets what the
// quickstart uses, never a second, hidden set.
func Default() Config {
	return Config{
		Data: Data{
			ImageSize:  32,
			BatchSize:  64,
			Workers:    2,
			Prefetch:   2,
			Shuffle:    true,
			BadImages:  "fail",
			BatchDType: "auto",
			Decoder:    "auto",
			Format:     "auto",
			MaxPixels:  50_000_000,
			MaxDecode:  data.DefaultMaxDecodeBytes,
			SizeRamp:   SizeRamp{Step: 32},
			Synthetic:  Synthetic{Classes: 10, Train: 400, Val: 100, Size: 64, Seed: 1},
		},
		Augment: Augment{
			Scale:           []float64{0.35, 1}, // the shapes fill part of the image; tiny crops would lose them
			Ratio:           []float64{0.75, 1.3333333},
			HFlip:           0.5,
			Brightness:      0.2,
			Contrast:        0.2,
			Saturation:      0.2,
			Mean:            []float64{0.485, 0.456, 0.406},
			Std:             []float64{0.229, 0.224, 0.225},
			EvalResizeRatio: 0.875,
		},
		Model: Model{Arch: model.ArchCNN, Stem: model.StemImageNet, Conv: []model.ConvSpec{
			{Channels: 16, Kernel: 3, Pool: true},
			{Channels: 32, Kernel: 3, Pool: true},
			{Channels: 64, Kernel: 3},
		}},
		Optim: Optim{Optimizer: model.OptimizerSGD, LR: 0.05, Momentum: 0.9, Betas: []float64{0.9, 0.999}, Eps: 1e-8,
			WeightDecay: 5e-4, DecayNormAndBias: true, WarmupEpochs: 1, Schedule: "cosine",
			StepEpochs: 30, Milestones: []int{}, Gamma: 0.1},
		Train: Train{Epochs: 12, Device: "cpu", Precision: "fp32", Seed: 1, Out: "runs/default", Progress: "auto", KeepCkpts: 2, OnDivergence: "auto",
			Dist: "auto", DistTimeout: 300, DistBucketMB: 25},
		Cuda: Cuda{Gemm: "auto", Graphs: "auto"},
	}
}
