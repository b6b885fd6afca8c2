// kernels.cu: every kernel of stoke's models (cnn, ResNets) on the GPU. gen-ptx.sh
// compiles it to kernels.ptx (compute_80), which is committed and embedded;
// newer drivers JIT it for their device (H100/H200 included).
//
// Each kernel's index arithmetic is mirrored, line for line, by a function in
// ref_kernels_test.go (TestGPUKernelParity checks every kernel against it, on
// a GPU or under the CPU stand-in for the driver). Change both together.
//
// One kernel family per layer: every convolution (the cnn's and the
// ResNets') is im2col, sgemm and col2im; the cnn's bias + ReLU is the
// forward's epilogue (bias_relu, in place of swap01) and its 2x2 pool is
// max_pool; every ReLU's gradient is relu_grad.
//
// Layouts: activations NCHW; a conv's im2col matrix is (C*K*K, B*Ho*Wo)
// with row c*K*K + kh*K + kw and column b*Ho*Wo + oh*Wo + ow, so the conv
// is W (Cout, C*K*K) · col = z (Cout, B*Ho*Wo). All matrices are row-major.

#define GRID_STRIDE(i, total) \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); i += (long long)gridDim.x * blockDim.x)

// The kernels after normalize_u8 (the convolution, BatchNorm, max-pool, the
// residual join, the ReLU gradient, Nesterov and AdamW) follow cpuops
// (conv2d.go, norm.go) and model/optim.go instead of ref_kernels_test.go
// mirrors: their tests (kernels_resnet_test.go) compare them with those
// host functions.

// block_sum is the sum of v over a block of 256 threads, added in a fixed
// order (a tree over threadIdx.x), so the result does not depend on timing;
// every thread gets it. Every thread of the block must call it. (Helpers
// that call __syncthreads stay above the first kernel: cudasim/build.sh
// counts a barrier as the enclosing kernel's.)
__device__ double block_sum(double v) {
	__shared__ double part[256];
	part[threadIdx.x] = v;
	__syncthreads();
	for (int w = 128; w > 0; w >>= 1) {
		if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	double s = part[0];
	__syncthreads(); // the next call overwrites part
	return s;
}

// bn_pos is the position of a BatchNorm loop at the j-th value of a
// channel, j = (sample b)·HW + q, stepping 256 values at a time without a
// division per value (bn_start, bn_next); bn_index is its index in (B, C, HW).
struct bn_pos {
	int b, q, db, dq;
};
__device__ bn_pos bn_start(long long j0, int HW) {
	bn_pos a;
	a.b = (int)(j0 / HW);
	a.q = (int)(j0 % HW);
	a.db = 256 / HW;
	a.dq = 256 % HW;
	return a;
}
__device__ void bn_next(bn_pos &a, int HW) {
	a.b += a.db;
	a.q += a.dq;
	if (a.q >= HW) {
		a.q -= HW;
		a.b++;
	}
}
__device__ long long bn_index(const bn_pos &a, int C, int c, int HW) { return ((long long)a.b * C + c) * HW + a.q; }

// bn_combine is the sum of channel c's nch <= 256 partials in slot (see
// the BatchNorm kernels), added in block_sum's fixed order; every thread of
// the block must call it and gets the sum. (saved is not const only because
// the stand-in's checked pointers do not convert to const.)
__device__ double bn_combine(double *saved, int C, int c, int nch, int slot) {
	return block_sum(threadIdx.x < nch ? saved[2 * C + 2 * ((long long)c * nch + threadIdx.x) + slot] : 0.);
}

// relu is max(v, 0) with a NaN kept, as Go's max (cpuops's ReLU) keeps it.
__device__ float relu(float v) { return !(v <= 0.f) ? v : 0.f; }

// relu_grad1 is dy where a ReLU's output y is not 0 (y >= 0 or NaN), as
// cpuops's reluGrad tests y's bits.
__device__ float relu_grad1(float y, float dy) { return y != 0.f ? dy : 0.f; }

// order_key maps a float to an int that orders as floats do (-0 below +0)
// with NaN above +Inf, as cpuops's orderKey: a NaN wins a max-pool.
__device__ int order_key(float v) {
	int b = __float_as_int(v);
	return b ^ (int)((unsigned)(b >> 31) >> 1);
}

// round_input rounds a GEMM input as cuBLAS's reduced-precision compute
// types round theirs: prec 0 (fp32) leaves x alone, 1 (TF32) keeps 10 of
// float's 23 mantissa bits, 2 (bfloat16) keeps 7; to nearest, ties to even;
// Inf stays Inf and a NaN a quiet NaN (as cudasim/fp.h, the stand-ins').
__device__ float round_input(float x, int prec) {
	if (prec == 0) return x;
	unsigned u = (unsigned)__float_as_int(x);
	if ((u & 0x7f800000u) == 0x7f800000u) {
		if (u & 0x007fffffu) u |= 0x00400000u;
	} else {
		int drop = prec == 1 ? 13 : 16;
		u = (u + (1u << (drop - 1)) - 1 + ((u >> drop) & 1)) & ~((1u << drop) - 1);
	}
	return __int_as_float((int)u);
}

extern "C" {

// sgemm: C (M,N) = op(A) · op(B), op(A) (M,Kd), op(B) (Kd,N); A is stored
// (Kd,M) when tA, B is stored (N,Kd) when tB. Tiles of 64x64 per block of
// 256 threads, 4x4 outputs per thread, 16-deep slices of Kd through shared
// memory. gridDim.z > 1 splits Kd: each slice adds its part with atomicAdd
// into a C the caller zeroed (for the long, thin weight-gradient products).
// prec (round_input's) rounds each element of A and B as its tile is
// loaded: fp32, TF32 or bf16 inputs, float32 accumulation, as cuBLAS's
// CUBLAS_COMPUTE_32F_PEDANTIC, _FAST_TF32 and _FAST_16BF.
#define TS 64
#define TK 16
__global__ void sgemm(int tA, int tB, int M, int N, int Kd, const float *A, const float *B, float *C, int prec) {
	__shared__ float As[TK][TS + 1];
	__shared__ float Bs[TK][TS + 1];
	int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	int m0 = blockIdx.y * TS, n0 = blockIdx.x * TS;
	int per = (Kd + gridDim.z - 1) / gridDim.z;
	per = (per + TK - 1) / TK * TK;
	int kBegin = blockIdx.z * per, kEnd = min(Kd, kBegin + per);
	float acc[4][4] = {{0.f}};
	for (int k0 = kBegin; k0 < kEnd; k0 += TK) {
		for (int l = threadIdx.x; l < TS * TK; l += 256) {
			int mm = tA ? l % TS : l / TK, ka = tA ? l / TS : l % TK;
			int gm = m0 + mm, gk = k0 + ka;
			As[ka][mm] = (gm < M && gk < kEnd) ? round_input(tA ? A[(long long)gk * M + gm] : A[(long long)gm * Kd + gk], prec) : 0.f;
			int nn = tB ? l / TK : l % TS, kb = tB ? l % TK : l / TS;
			int gn = n0 + nn, gk2 = k0 + kb;
			Bs[kb][nn] = (gn < N && gk2 < kEnd) ? round_input(tB ? B[(long long)gn * Kd + gk2] : B[(long long)gk2 * N + gn], prec) : 0.f;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < TK; kk++) {
			float a[4], b[4];
#pragma unroll
			for (int r = 0; r < 4; r++) a[r] = As[kk][ty + 16 * r];
#pragma unroll
			for (int s = 0; s < 4; s++) b[s] = Bs[kk][tx + 16 * s];
#pragma unroll
			for (int r = 0; r < 4; r++)
#pragma unroll
				for (int s = 0; s < 4; s++) acc[r][s] += a[r] * b[s];
		}
		__syncthreads();
	}
	for (int r = 0; r < 4; r++)
		for (int s = 0; s < 4; s++) {
			int gm = m0 + ty + 16 * r, gn = n0 + tx + 16 * s;
			if (gm >= M || gn >= N) continue;
			if (gridDim.z > 1) atomicAdd(&C[(long long)gm * N + gn], acc[r][s]);
			else C[(long long)gm * N + gn] = acc[r][s];
		}
}

// bias_relu: the cnn's conv epilogue, z (Cout, B*HW) -> y (B, Cout, HW) =
// relu(z + bias[c]): swap01 with the bias added and the ReLU applied.
__global__ void bias_relu(const float *z, const float *bias, float *y, int B, int Cout, int HW) {
	GRID_STRIDE(i, (long long)B * Cout * HW) {
		int p = (int)(i % HW), c = (int)((i / HW) % Cout), b = (int)(i / ((long long)Cout * HW));
		float v = z[(long long)c * B * HW + (long long)b * HW + p] + bias[c];
		y[i] = relu(v); // a NaN stays NaN, as on the CPU
	}
}

// row_sums: out[r] = sum of a's row r, a (R, N): one block of 256 per row.
__global__ void row_sums(const float *a, float *out, int R, int N) {
	__shared__ float part[256];
	int r = blockIdx.x;
	if (r >= R) return;
	float s = 0.f;
	for (int j = threadIdx.x; j < N; j += 256) s += a[(long long)r * N + j];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = 128; w > 0; w >>= 1) {
		if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) out[r] = part[0];
}

// col_sums: out[j] = sum over rows of a (R, N), column j.
__global__ void col_sums(const float *a, float *out, int R, int N) {
	GRID_STRIDE(j, N) {
		float s = 0.f;
		for (int r = 0; r < R; r++) s += a[(long long)r * N + j];
		out[j] = s;
	}
}

// avg_pool: global average pool, x (BC, HW) -> y (BC).
__global__ void avg_pool(const float *x, float *y, int BC, int HW) {
	GRID_STRIDE(i, BC) {
		float s = 0.f;
		for (int p = 0; p < HW; p++) s += x[i * HW + p];
		y[i] = s / HW;
	}
}

// avg_pool_backward: dx (BC, HW) = dy[bc] / HW.
__global__ void avg_pool_backward(const float *dy, float *dx, int BC, int HW) {
	GRID_STRIDE(i, (long long)BC * HW) { dx[i] = dy[i / HW] / HW; }
}

// add_rows: y (R, N) += bias (N) on every row.
__global__ void add_rows(float *y, const float *bias, int R, int N) {
	GRID_STRIDE(i, (long long)R * N) { y[i] += bias[i % N]; }
}

// softmax_xent: per row r < n, loss[r] = logsumexp(z_r) - z_r[label] and
// dz_r = (softmax(z_r) - onehot) / n; rows >= n (batch padding) get 0.
__global__ void softmax_xent(const float *z, const int *labels, float *loss, float *dz, int B, int K, int n) {
	GRID_STRIDE(r, B) {
		const float *row = z + r * K;
		float *d = dz + r * K;
		if (r >= n) {
			loss[r] = 0.f;
			for (int j = 0; j < K; j++) d[j] = 0.f;
			continue;
		}
		float m = row[0];
		for (int j = 1; j < K; j++) m = fmaxf(m, row[j]);
		float s = 0.f;
		for (int j = 0; j < K; j++) s += expf(row[j] - m);
		int y = labels[r];
		loss[r] = m + logf(s) - row[y];
		for (int j = 0; j < K; j++) d[j] = (expf(row[j] - m) / s - (j == y ? 1.f : 0.f)) / n;
	}
}

// The training step's loss on the device (engine_graph.go, gpuXent with a
// step ring): the target is built from the labels as model.Model.loadInput
// builds it on the host (model/loss.go), in float32 with the same
// operations: row r < n is eps/K/n everywhere plus (1-eps)/n on its label
// (1/n on the label when eps is 0); rows >= n are zero (batch padding).
__device__ float xent_target(int j, int y, int K, int n, float eps) {
	if (eps == 0.f) return j == y ? 1.f / (float)n : 0.f;
	float off = eps / (float)K / (float)n;
	return j == y ? (1.f - eps) / (float)n + off : off;
}

// xent_lse is log sum exp(row) in double, the row max taken out first, as
// cpuops.LogSumExp.
__device__ double xent_lse(const float *row, int K) {
	double m = row[0];
	for (int j = 1; j < K; j++) m = fmax(m, (double)row[j]);
	double s = 0.0;
	for (int j = 0; j < K; j++) s += exp((double)row[j] - m);
	return m + log(s);
}

// The step's arguments (sa): what changes from one training step to the
// next, in device memory rather than in the launches, so that the launches
// of a step captured as a CUDA Graph are those of every later step (the
// Backend copies each step's into place before it runs; an engine of its
// own writes them with set_step_args when they change). sa[0] the learning
// rate, sa[1] and sa[2] AdamW's lr/(1-b1^t) and sqrt(1-b2^t), sa[3] the
// step's slot in the result ring and sa[4] the step's number (ints).
#define SA_LR(sa) ((sa)[0])
#define SA_ADAM_STEP(sa) ((sa)[1])
#define SA_ADAM_SQ(sa) ((sa)[2])
#define SA_SLOT(sa) __float_as_int((sa)[3])
#define SA_STEP(sa) __float_as_int((sa)[4])

// set_step_args: one thread writes sa.
__global__ void set_step_args(float *sa, float lr, float astep, float asq, int slot, int step) {
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		sa[0] = lr;
		sa[1] = astep;
		sa[2] = asq;
		sa[3] = __int_as_float(slot);
		sa[4] = __int_as_float(step);
	}
}

// xent_loss: one block of 256 threads. The loss sum_r sum_j t_rj (lse(z_r) -
// z_rj) in double (cpuops.XentForward), rounded to float as the graph's
// scalar is, and the top-1 hits among the n valid rows (model.Rank: a class
// ties the label's score only from a lower index), go to slot `slot` of the
// ring: ring[2*slot] the loss, ring[2*slot+1] the hits as a float (exact up
// to 2^24). The first step whose loss is not finite is kept in *flag
// (step+1); while it is set, the update kernels do nothing. The slot and
// the step are the step's arguments in device memory (sa, set_step_args),
// so that a captured graph of the step replays with the next step's.
__global__ void xent_loss(const float *z, const int *labels, int B, int K, int n, float eps, float *ring, const float *sa,
			  int *flag) {
	int slot = SA_SLOT(sa), step = SA_STEP(sa);
	double loss = 0.0, hits = 0.0;
	for (int r = threadIdx.x; r < n && r < B; r += blockDim.x) {
		const float *row = z + (long long)r * K;
		int y = labels[r];
		double lse = xent_lse(row, K);
		int rank = 0;
		for (int j = 0; j < K; j++) {
			float t = xent_target(j, y, K, n, eps);
			if (t != 0.f) loss += (double)t * (lse - (double)row[j]);
			if (row[j] > row[y] || (row[j] == row[y] && j < y)) rank++;
		}
		if (rank == 0) hits += 1.0;
	}
	loss = block_sum(loss);
	hits = block_sum(hits);
	// cudasim/build.sh marks a kernel as one with barriers by its own
	// __syncthreads (block_sum's are above the kernels): say so here.
	__syncthreads();
	if (threadIdx.x == 0) {
		float l = (float)loss;
		ring[2 * slot] = l;
		ring[2 * slot + 1] = (float)hits;
		if (!(fabsf(l) <= 3.402823466e38f) && *flag == 0) *flag = step + 1;
	}
}

// xent_grad: dz = g*(softmax(z)*w - t) row by row, w = sum_j t_j (in
// double, as cpuops.XentBackward); rows >= n get 0.
__global__ void xent_grad(const float *z, const int *labels, float *dz, int B, int K, int n, float eps, float g) {
	GRID_STRIDE(r, B) {
		const float *row = z + r * K;
		float *d = dz + r * K;
		if (r >= n) {
			for (int j = 0; j < K; j++) d[j] = 0.f;
			continue;
		}
		int y = labels[r];
		double w = 0.0;
		for (int j = 0; j < K; j++) w += (double)xent_target(j, y, K, n, eps);
		double lse = xent_lse(row, K);
		for (int j = 0; j < K; j++) {
			double p = exp((double)row[j] - lse);
			d[j] = (float)((double)g * (p * w - (double)xent_target(j, y, K, n, eps)));
		}
	}
}

// stopped is whether a step's loss was not finite (xent_loss's flag): the
// update kernels and the running statistics' commit then leave everything
// as it was.
__device__ bool stopped(const int *flag) { return *flag != 0; }

// copy_f32_unless: copy_f32 unless stopped (BatchNorm's running statistics
// are kept by the step that trained on them, or by none).
__global__ void copy_f32_unless(const float *src, float *dst, int n, const int *flag) {
	if (stopped(flag)) return;
	GRID_STRIDE(i, n) { dst[i] = src[i]; }
}

// sgd: PyTorch's SGD (dampening 0, no Nesterov): g = grad + wd*w;
// v = g on the first step, else mom*v + g; w -= lr*v (lr*g without momentum);
// lr is the step's (sa).
__global__ void sgd(float *w, const float *grad, float *v, int N, const float *sa, float mom, float wd, int first,
		    const int *flag) {
	if (stopped(flag)) return;
	float lr = SA_LR(sa);
	GRID_STRIDE(i, N) {
		float g = grad[i] + wd * w[i];
		if (mom != 0.f) {
			v[i] = first ? g : mom * v[i] + g;
			g = v[i];
		}
		w[i] -= lr * g;
	}
}

// normalize_u8: x (B, 3, HW) bytes -> y floats, (x/255 - mean[c]) / std[c].
__global__ void normalize_u8(const unsigned char *x, float *y, int B, int HW, float m0, float m1, float m2, float s0,
			     float s1, float s2) {
	GRID_STRIDE(i, (long long)B * 3 * HW) {
		int c = (int)((i / HW) % 3);
		float m = c == 0 ? m0 : (c == 1 ? m1 : m2), s = c == 0 ? s0 : (c == 1 ? s1 : s2);
		y[i] = (x[i] / 255.f - m) / s;
	}
}

// add_f32: c = a + b over n floats (gorgonia's fan-out Add on device values).
// c may be a or b (the in-place form): each element is read before written.
__global__ void add_f32(const float *a, const float *b, float *c, int n) {
	GRID_STRIDE(i, n) { c[i] = a[i] + b[i]; }
}

// copy_f32: dst = src over n floats (the staged BatchNorm statistics).
__global__ void copy_f32(const float *src, float *dst, int n) {
	GRID_STRIDE(i, n) { dst[i] = src[i]; }
}

// swap01: y (D1, D0, HW) = x (D0, D1, HW) with the first two axes swapped:
// NCHW <-> the (C, B·H·W) layout of a convolution's GEMM.
__global__ void swap01(const float *x, float *y, int D0, int D1, int HW) {
	GRID_STRIDE(i, (long long)D0 * D1 * HW) {
		int p = (int)(i % HW), a = (int)((i / HW) % D0), b = (int)(i / ((long long)D0 * HW));
		y[i] = x[((long long)a * D1 + b) * HW + p];
	}
}

// im2col: x (B,C,H,W) -> col (C*K*K, B*Ho*Wo) for stride S, padding P:
// row c*K*K + kh*K + kw, column b*Ho*Wo + oh*Wo + ow reads x at
// (oh*S - P + kh, ow*S - P + kw), 0 outside. Block row blockIdx.y (its
// c, kh, kw found once), threads over the columns; a thread finds its first
// column's (b, oh, ow) once and then steps them by the grid's stride as a
// mixed-radix counter: no division per element.
__global__ void im2col(const float *x, float *col, int B, int C, int H, int W, int K, int S, int P, int Ho, int Wo) {
	int row = blockIdx.y, c = row / (K * K), kh = (row % (K * K)) / K, kw = row % K;
	int HoWo = Ho * Wo;
	long long N = (long long)B * HoWo, j = (long long)blockIdx.x * blockDim.x + threadIdx.x, st = (long long)gridDim.x * blockDim.x;
	int ow = (int)(j % Wo), oh = (int)((j / Wo) % Ho), b = (int)(j / HoWo);
	int dow = (int)(st % Wo), doh = (int)((st / Wo) % Ho), db = (int)(st / HoWo);
	const float *xc = x + (long long)c * H * W;
	float *out = col + (long long)row * N;
	for (; j < N; j += st) {
		int ih = oh * S - P + kh, iw = ow * S - P + kw;
		out[j] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[((long long)b * C * H + ih) * W + iw] : 0.f;
		ow += dow;
		if (ow >= Wo) {
			ow -= Wo;
			oh++;
		}
		oh += doh;
		if (oh >= Ho) {
			oh -= Ho;
			b++;
		}
		b += db;
	}
}

// col2im: im2col's adjoint, gathered (no atomics): dx (B,C,H,W) sums
// every dcol entry read from its position, in (kh, kw) order as cpuops's
// col2im adds them. A thread finds its first element's (b, c, ih, iw) once
// and steps them by the grid's stride (a mixed-radix counter); the windows
// covering (ih, iw) are the ranges [oh0, oh1] x [ow0, ow1] (kh = ih + P -
// oh*S), walked from oh1 down so that kh rises: no division in the loop.
__global__ void col2im(const float *dcol, float *dx, int B, int C, int H, int W, int K, int S, int P, int Ho, int Wo) {
	long long N = (long long)B * Ho * Wo, total = (long long)B * C * H * W;
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, st = (long long)gridDim.x * blockDim.x;
	int iw = (int)(i % W), ih = (int)((i / W) % H), c = (int)((i / ((long long)H * W)) % C), b = (int)(i / ((long long)C * H * W));
	int diw = (int)(st % W), dih = (int)((st / W) % H), dc = (int)((st / ((long long)H * W)) % C), db = (int)(st / ((long long)C * H * W));
	for (; i < total; i += st) {
		int oh0 = max(0, (ih + P - K + S) / S), oh1 = min(Ho - 1, (ih + P) / S);
		int ow0 = max(0, (iw + P - K + S) / S), ow1 = min(Wo - 1, (iw + P) / S);
		const float *base = dcol + (long long)b * Ho * Wo;
		float s = 0.f;
		for (int oh = oh1; oh >= oh0; oh--) {
			int kh = ih + P - oh * S;
			for (int ow = ow1; ow >= ow0; ow--) {
				int kw = iw + P - ow * S;
				s += base[(long long)(c * K * K + kh * K + kw) * N + oh * Wo + ow];
			}
		}
		dx[i] = s;
		iw += diw;
		if (iw >= W) {
			iw -= W;
			ih++;
		}
		ih += dih;
		if (ih >= H) {
			ih -= H;
			c++;
		}
		c += dc;
		if (c >= C) {
			c -= C;
			b++;
		}
		b += db;
	}
}

// The BatchNorm kernels round x·scale + shift and the like as the host does
// (no fused multiply-add, which nvcc would otherwise contract them into): a
// channel whose mean is far from 0 against its spread cancels most of x·scale
// in the add, and an FMA's different rounding would show there.
//
// BatchNorm2d over the first n samples of x (B, C, HW) sums each channel's
// cnt = n·HW values in two levels, so that many blocks share a channel (the
// GPU is full) and the sums are the same bits on every run: every kernel
// runs on a grid (nch, C) of 256-thread blocks, block (k, c) covering values
// [k·L, min((k+1)·L, cnt)) of channel c (thread t every 256th from k·L + t).
// The stats kernels add their block's values in double (per thread, then
// block_sum's fixed tree) into partial (c, k) of a slot,
// saved[2C + 2(c·nch + k) + slot]; the next kernel's blocks add channel c's
// nch <= 256 partials in block_sum's tree again (bn_combine), each block for
// itself. nch and L depend on the shape only (bnChunks, kernels_resnet.go).
// saved[2c] and saved[2c+1] are the training forward's mean and
// 1/sqrt(var + eps), for the backward. Rows >= n are not touched (the
// wrappers zero them).

// bn_stats: pass 0 puts the partial sums of x in slot 0; pass 1 (after pass
// 0) the partial sums of (x - mean)^2 in slot 1, with the mean from slot 0:
// two passes, as cpuops's.
__global__ void bn_stats(const float *x, double *saved, int C, int HW, int n, int L, int pass) {
	int c = blockIdx.y, nch = gridDim.x;
	long long cnt = (long long)n * HW, j0 = (long long)blockIdx.x * L, j1 = min(cnt, j0 + L);
	double mean = pass ? bn_combine(saved, C, c, nch, 0) / (double)cnt : 0.;
	double s = 0.;
	bn_pos a = bn_start(j0 + threadIdx.x, HW);
	for (long long j = j0 + threadIdx.x; j < j1; j += 256, bn_next(a, HW)) {
		double v = (double)x[bn_index(a, C, c, HW)];
		s += pass ? (v - mean) * (v - mean) : v;
	}
	s = block_sum(s);
	if (threadIdx.x == 0) saved[2 * C + 2 * ((long long)c * nch + blockIdx.x) + pass] = s;
	__syncthreads(); // build.sh runs a kernel as fibers when its own text has a barrier
}

// bn_apply: y = x·scale + shift (a ReLU after it when flags & 2). Training
// (flags & 1, after both bn_stats passes) normalizes with the batch mean
// and biased variance; block (0, c) saves them for the backward and moves
// rm, rv toward the mean and the unbiased variance with momentum 0.1.
// Evaluation normalizes with rm, rv and leaves saved alone.
__global__ void bn_apply(const float *x, const float *gamma, const float *beta, float *y, float *rm, float *rv, double *saved,
			 int C, int HW, int n, int L, int flags) {
	int c = blockIdx.y, nch = gridDim.x;
	long long cnt = (long long)n * HW, j0 = (long long)blockIdx.x * L, j1 = min(cnt, j0 + L);
	double mean, invstd;
	if (flags & 1) {
		mean = bn_combine(saved, C, c, nch, 0) / (double)cnt;
		double ss = bn_combine(saved, C, c, nch, 1);
		double var = ss / (double)cnt;
		invstd = 1. / sqrt(var + 1e-5);
		if (blockIdx.x == 0 && threadIdx.x == 0) {
			saved[2 * c] = mean;
			saved[2 * c + 1] = invstd;
			double unbiased = cnt > 1 ? ss / (double)(cnt - 1) : var;
			rm[c] = (float)(0.9 * (double)rm[c] + 0.1 * mean);
			rv[c] = (float)(0.9 * (double)rv[c] + 0.1 * unbiased);
		}
	} else {
		mean = (double)rm[c];
		invstd = 1. / sqrt((double)rv[c] + 1e-5);
	}
	float scale = (float)((double)gamma[c] * invstd);
	float shift = (float)((double)beta[c] - mean * (double)gamma[c] * invstd);
	bn_pos a = bn_start(j0 + threadIdx.x, HW);
	for (long long j = j0 + threadIdx.x; j < j1; j += 256, bn_next(a, HW)) {
		long long at = bn_index(a, C, c, HW);
		float v = __fadd_rn(__fmul_rn(x[at], scale), shift); // unfused, as on the host
		y[at] = (flags & 2) ? relu(v) : v;
	}
	__syncthreads(); // as in bn_stats: for build.sh
}

// bn_grad_stats: the backward's partial sums, for the last training forward
// over the same n: g = dy, masked by the fused ReLU's output y when fused,
// into slot 0, g·x into slot 1. When fused it also stores g in dx, for
// bn_grad_apply (which then reads neither y nor dy: the same memory traffic
// as reading them twice, and within the launch's 12 arguments).
__global__ void bn_grad_stats(const float *x, const float *y, const float *dy, double *saved, float *dx, int C, int HW, int n,
			      int L, int fused) {
	int c = blockIdx.y, nch = gridDim.x;
	long long cnt = (long long)n * HW, j0 = (long long)blockIdx.x * L, j1 = min(cnt, j0 + L);
	double sg = 0., sgx = 0.;
	bn_pos a = bn_start(j0 + threadIdx.x, HW);
	for (long long j = j0 + threadIdx.x; j < j1; j += 256, bn_next(a, HW)) {
		long long at = bn_index(a, C, c, HW);
		float g = dy[at];
		if (fused) dx[at] = g = relu_grad1(y[at], g);
		sg += (double)g;
		sgx += (double)g * (double)x[at];
	}
	sg = block_sum(sg);
	sgx = block_sum(sgx);
	if (threadIdx.x == 0) {
		long long at = 2 * C + 2 * ((long long)c * nch + blockIdx.x);
		saved[at] = sg;
		saved[at + 1] = sgx;
	}
	__syncthreads(); // as in bn_stats: for build.sh
}

// bn_grad_apply (after bn_grad_stats): with g the masked gradient (dx when
// fused, dy when not: g may be dx) and x^ = (x - mean)·invstd,
// dbeta = Σ g, dgamma = Σ g·x^ (block (0, c) writes them),
// dx = gamma·invstd/N · (N·g - dbeta - x^·dgamma).
__global__ void bn_grad_apply(const float *x, const float *gamma, const float *g, double *saved, float *dx, float *dgamma,
			      float *dbeta, int C, int HW, int n, int L) {
	int c = blockIdx.y, nch = gridDim.x;
	long long cnt = (long long)n * HW, j0 = (long long)blockIdx.x * L, j1 = min(cnt, j0 + L);
	double mean = saved[2 * c], invstd = saved[2 * c + 1];
	double sg = bn_combine(saved, C, c, nch, 0);
	double sgx = (bn_combine(saved, C, c, nch, 1) - mean * sg) * invstd;
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		dbeta[c] = (float)sg;
		dgamma[c] = (float)sgx;
	}
	double k = (double)gamma[c] * invstd / (double)cnt;
	float ga = (float)(k * (double)cnt), bx = (float)(-k * sgx * invstd), d = (float)(-k * sg + k * sgx * invstd * mean);
	bn_pos a = bn_start(j0 + threadIdx.x, HW);
	for (long long j = j0 + threadIdx.x; j < j1; j += 256, bn_next(a, HW)) {
		long long at = bn_index(a, C, c, HW);
		dx[at] = __fadd_rn(__fadd_rn(__fmul_rn(ga, g[at]), __fmul_rn(bx, x[at])), d); // unfused, as on the host
	}
	__syncthreads(); // as in bn_stats: for build.sh
}

// max_pool: PyTorch's MaxPool2d(K, S, P) on x (BC, H, W) -> y (BC, Ho, Wo):
// padding never wins, the first maximum of a window in row-major order is
// kept (order_key: NaN wins), arg = its index in x's H x W plane.
__global__ void max_pool(const float *x, float *y, int *arg, int BC, int H, int W, int K, int S, int P, int Ho, int Wo) {
	GRID_STRIDE(i, (long long)BC * Ho * Wo) {
		int ow = (int)(i % Wo), oh = (int)((i / Wo) % Ho);
		long long bc = i / ((long long)Ho * Wo);
		const float *plane = x + bc * H * W;
		int best = -1, bk = 0;
		for (int kh = 0; kh < K; kh++) {
			int ih = oh * S - P + kh;
			if (ih < 0 || ih >= H) continue;
			for (int kw = 0; kw < K; kw++) {
				int iw = ow * S - P + kw;
				if (iw < 0 || iw >= W) continue;
				int j = ih * W + iw, k = order_key(plane[j]);
				if (best < 0 || k > bk) {
					best = j;
					bk = k;
				}
			}
		}
		y[i] = plane[best];
		arg[i] = best;
	}
}

// max_pool_backward: dx (BC, H, W) = Σ dy over the windows whose argmax is
// each position, gathered (windows overlap when S < K) in row-major window
// order, as cpuops adds them; every dx element is written.
__global__ void max_pool_backward(const float *dy, const int *arg, float *dx, int BC, int H, int W, int K, int S, int P, int Ho,
				   int Wo) {
	GRID_STRIDE(i, (long long)BC * H * W) {
		int j = (int)(i % ((long long)H * W)), ih = j / W, iw = j % W;
		long long o = i / ((long long)H * W) * Ho * Wo;
		// windows oh with oh*S - P <= ih <= oh*S - P + K - 1
		int oh0 = max(0, (ih + P - K + S) / S), oh1 = min(Ho - 1, (ih + P) / S);
		int ow0 = max(0, (iw + P - K + S) / S), ow1 = min(Wo - 1, (iw + P) / S);
		float s = 0.f;
		for (int oh = oh0; oh <= oh1; oh++)
			for (int ow = ow0; ow <= ow1; ow++)
				if (arg[o + oh * Wo + ow] == j) s += dy[o + oh * Wo + ow];
		dx[i] = s;
	}
}

// add_relu: the residual join y = max(a + b, 0) over n floats (NaN kept).
__global__ void add_relu(const float *a, const float *b, float *y, int n) {
	GRID_STRIDE(i, n) { y[i] = relu(a[i] + b[i]); }
}

// relu_grad: d = dy where the ReLU output y is not 0, over n floats; d may
// be dy.
__global__ void relu_grad(const float *y, const float *dy, float *d, int n) {
	GRID_STRIDE(i, n) { d[i] = relu_grad1(y[i], dy[i]); }
}

// sgd_nesterov: torch.optim.SGD(nesterov=True, dampening 0): g = grad + wd*w;
// v = g on the first step, else mom*v + g; w -= lr*(g + mom*v).
__global__ void sgd_nesterov(float *w, const float *grad, float *v, int N, const float *sa, float mom, float wd, int first,
			     const int *flag) {
	if (stopped(flag)) return;
	float lr = SA_LR(sa);
	GRID_STRIDE(i, N) {
		float g = grad[i] + wd * w[i];
		v[i] = first ? g : mom * v[i] + g;
		w[i] -= lr * (g + mom * v[i]);
	}
}

// adamw: torch.optim.AdamW (amsgrad off), one step, with the step's
// step = lr/(1-b1^t) and sq = sqrt(1-b2^t) (sa, computed on the host as
// model.AdamWUpdate does) and decay = 1 - lr*wd rounded as the host's
// float32 product and difference: w *= decay; m = b1*m + (1-b1)*g;
// v = b2*v + (1-b2)*g*g; w -= step*m / (sqrt(v)/sq + eps).
__global__ void adamw(float *w, const float *grad, float *m, float *v, int N, float b1, float b2, float eps, float wd,
		      const float *sa, const int *flag) {
	if (stopped(flag)) return;
	float step = SA_ADAM_STEP(sa), sq = SA_ADAM_SQ(sa);
	float decay = __fsub_rn(1.f, __fmul_rn(SA_LR(sa), wd));
	GRID_STRIDE(i, N) {
		float g = grad[i];
		w[i] *= decay;
		m[i] = b1 * m[i] + (1.f - b1) * g;
		v[i] = b2 * v[i] + (1.f - b2) * g * g;
		w[i] -= step * m[i] / (sqrtf(v[i]) / sq + eps);
	}
}

// scale_unless: x = x - a*x (x·(1-a), rounded as sgd's w -= lr*g with
// g = w) unless stopped: NCCLSync's scaling of a bucket of summed
// gradients, whose factor is not a step argument.
__global__ void scale_unless(float *x, int n, float a, const int *flag) {
	if (stopped(flag)) return;
	GRID_STRIDE(i, n) { x[i] -= a * x[i]; }
}

} // extern "C"
