// kernels.cu: every kernel of stoke's CNN on the GPU. scripts/gen-ptx.sh
// compiles it to kernels.ptx (compute_80), which is committed and embedded;
// newer drivers JIT it for their device (H100/H200 included).
//
// Each kernel's index arithmetic is mirrored, line for line, by a function in
// ref_kernels_test.go (TestGPUKernelParity checks every kernel against it, on
// a GPU or under the CPU stand-in for the driver). Change both together.
//
// Layouts: activations NCHW; a conv's im2col matrix is (C*K*K, B*H*W) with
// row c*K*K + kh*K + kw and column b*H*W + oh*W + ow, so the conv is
// W (Cout, C*K*K) · col = z (Cout, B*H*W). All matrices are row-major.

#define GRID_STRIDE(i, total) \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (total); i += (long long)gridDim.x * blockDim.x)

extern "C" {

// im2col: x (B,C,H,W) -> col (C*K*K, B*H*W); stride 1, padding P, H x W out.
__global__ void im2col(const float *x, float *col, int B, int C, int H, int W, int K, int P) {
	long long N = (long long)B * H * W;
	GRID_STRIDE(i, (long long)C * K * K * N) {
		int row = (int)(i / N), j = (int)(i % N);
		int c = row / (K * K), kh = (row % (K * K)) / K, kw = row % K;
		int b = j / (H * W), p = j % (H * W), oh = p / W, ow = p % W;
		int ih = oh + kh - P, iw = ow + kw - P;
		col[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[(((long long)b * C + c) * H + ih) * W + iw] : 0.f;
	}
}

// col2im: the adjoint of im2col, gathered (no atomics): dx (B,C,H,W) sums
// every dcol entry that im2col read from its position.
__global__ void col2im(const float *dcol, float *dx, int B, int C, int H, int W, int K, int P) {
	long long N = (long long)B * H * W;
	GRID_STRIDE(i, (long long)B * C * H * W) {
		int iw = (int)(i % W), ih = (int)((i / W) % H), c = (int)((i / ((long long)H * W)) % C), b = (int)(i / ((long long)C * H * W));
		float s = 0.f;
		for (int kh = 0; kh < K; kh++) {
			int oh = ih - kh + P;
			if (oh < 0 || oh >= H) continue;
			for (int kw = 0; kw < K; kw++) {
				int ow = iw - kw + P;
				if (ow < 0 || ow >= W) continue;
				s += dcol[(long long)(c * K * K + kh * K + kw) * N + (long long)b * H * W + oh * W + ow];
			}
		}
		dx[i] = s;
	}
}

// sgemm: C (M,N) = op(A) · op(B), op(A) (M,Kd), op(B) (Kd,N); A is stored
// (Kd,M) when tA, B is stored (N,Kd) when tB. Tiles of 64x64 per block of
// 256 threads, 4x4 outputs per thread, 16-deep slices of Kd through shared
// memory. gridDim.z > 1 splits Kd: each slice adds its part with atomicAdd
// into a C the caller zeroed (for the long, thin weight-gradient products).
#define TS 64
#define TK 16
__global__ void sgemm(int tA, int tB, int M, int N, int Kd, const float *A, const float *B, float *C) {
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
			As[ka][mm] = (gm < M && gk < kEnd) ? (tA ? A[(long long)gk * M + gm] : A[(long long)gm * Kd + gk]) : 0.f;
			int nn = tB ? l / TK : l % TS, kb = tB ? l % TK : l / TS;
			int gn = n0 + nn, gk2 = k0 + kb;
			Bs[kb][nn] = (gn < N && gk2 < kEnd) ? (tB ? B[(long long)gn * Kd + gk2] : B[(long long)gk2 * N + gn]) : 0.f;
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

// bias_relu: z (Cout, B*HW) -> y (B, Cout, HW) = max(0, z + bias[c]).
__global__ void bias_relu(const float *z, const float *bias, float *y, int B, int Cout, int HW) {
	GRID_STRIDE(i, (long long)B * Cout * HW) {
		int p = (int)(i % HW), c = (int)((i / HW) % Cout), b = (int)(i / ((long long)Cout * HW));
		float v = z[(long long)c * B * HW + (long long)b * HW + p] + bias[c];
		y[i] = v > 0.f ? v : 0.f;
	}
}

// relu_backward: dz (Cout, B*HW) = dy (B, Cout, HW) where y > 0, else 0.
__global__ void relu_backward(const float *dy, const float *y, float *dz, int B, int Cout, int HW) {
	GRID_STRIDE(i, (long long)B * Cout * HW) {
		int p = (int)(i % HW), c = (int)((i / HW) % Cout), b = (int)(i / ((long long)Cout * HW));
		dz[(long long)c * B * HW + (long long)b * HW + p] = y[i] > 0.f ? dy[i] : 0.f;
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

// max_pool: 2x2 windows, stride 2, floor: x (BC, H, W) -> y (BC, H/2, W/2),
// arg = the window's first maximum in row-major order, as an index into
// x's H x W plane (what the backward scatters to).
__global__ void max_pool(const float *x, float *y, int *arg, int BC, int H, int W) {
	int OH = H / 2, OW = W / 2;
	GRID_STRIDE(i, (long long)BC * OH * OW) {
		int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
		long long bc = i / ((long long)OH * OW);
		const float *plane = x + bc * H * W;
		int best = (2 * oh) * W + 2 * ow;
		for (int d = 1; d < 4; d++) {
			int k = (2 * oh + d / 2) * W + 2 * ow + d % 2;
			if (plane[k] > plane[best]) best = k;
		}
		y[i] = plane[best];
		arg[i] = best;
	}
}

// max_pool_backward: dx (BC, H, W), zeroed by the caller, gets dy at each
// window's argmax (windows do not overlap: no two threads write one place).
__global__ void max_pool_backward(const float *dy, const int *arg, float *dx, int BC, int H, int W) {
	int OH = H / 2, OW = W / 2;
	GRID_STRIDE(i, (long long)BC * OH * OW) {
		long long bc = i / ((long long)OH * OW);
		dx[bc * H * W + arg[i]] = dy[i];
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

// sgd: PyTorch's SGD (dampening 0, no Nesterov): g = grad + wd*w;
// v = g on the first step, else mom*v + g; w -= lr*v (lr*g without momentum).
__global__ void sgd(float *w, const float *grad, float *v, int N, float lr, float mom, float wd, int first) {
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

} // extern "C"
