// The GPT-2 pass over any number of rows, batch-invariant: the C++ twin of the Python reference block
// (specdec_core/model/kernel.py builds it and says when it runs).
//
// A pass feeds n rows, each a token at a position, its keys and values written to a slot of a stream's
// cache (one stream for one sequence; a batch has one per sequence), each row attending to the slots of
// its stream that it sees: slots 0..its own (causal), or those its row of a mask names (a tree).
//
// Batch-invariant: every value a row gets is computed from that row's own inputs by the same
// operations in the same order whatever the number of rows, so row i of a k-row pass (a verify pass,
// a prefill, a tree, a batch) is bit for bit the one-token pass at its position.
// - products with a weight: the weights are packed once into panels of PANEL columns (n_in, PANEL),
//   read once per pass for a block of up to ROWS rows held in registers; each output starts at its
//   bias and adds the products of CHUNK inputs at a time, each chunk summed from zero by fused
//   multiply-adds in input order (the two levels keep the error of a long sum small);
// - layer norms, attention and gelu: one row at a time, in fixed loops whose length does not depend on
//   the number of rows (attention's softmax over the row's visible slots in slot order, in double).
//
// The cache is (layers, streams, capacity, 2E): a slot's key | value.
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
namespace vec {
using V = __m512;
constexpr int kLanes = 16;
inline V zero() { return _mm512_setzero_ps(); }
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline V splat(float x) { return _mm512_set1_ps(x); }
inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
}  // namespace vec
constexpr int kVecs = 4, kRows = 6;  // 24 accumulators, 4 weights and a broadcast in 32 registers
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
namespace vec {
using V = __m256;
constexpr int kLanes = 8;
inline V zero() { return _mm256_setzero_ps(); }
inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline V splat(float x) { return _mm256_set1_ps(x); }
inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
}  // namespace vec
constexpr int kVecs = 2, kRows = 6;  // 12 accumulators, 2 weights and a broadcast in 16 registers
#else
namespace vec {
using V = float;
constexpr int kLanes = 1;
inline V zero() { return 0.0f; }
inline V load(const float* p) { return *p; }
inline V splat(float x) { return x; }
inline V fma(V a, V b, V c) { return std::fma(a, b, c); }
inline void store(float* p, V v) { *p = v; }
}  // namespace vec
constexpr int kVecs = 8, kRows = 4;
#endif

namespace {

constexpr int kPanel = vec::kLanes * kVecs;  // columns of a packed panel
constexpr int64_t kChunk = 64;  // inputs summed from zero before joining an output's sum
// How far ahead of the inputs being summed their weights are fetched (inputs). The hardware prefetcher
// alone left a 6-row pass waiting on memory (v(5) 1.9 on the bundled target); fetched 64 inputs
// (16 kB) ahead, the products of several rows hide behind the stream of weights (v(5) 1.1-1.2).
constexpr int64_t kAhead = 64;

// Y (R, PANEL) += X (R rows, stride ldx) . P (inputs i0..i1 of a panel): the sum over the chunk from zero
// by fused multiply-adds in input order, then added to Y in double.
template <int R>
void panel_chunk(const float* X, int64_t ldx, const float* P, int64_t i0, int64_t i1, double* Y) {
  vec::V acc[R][kVecs];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kVecs; ++c) acc[r][c] = vec::zero();
  for (int64_t i = i0; i < i1; ++i) {
    const float* w = P + i * kPanel;
    for (int c = 0; c < kPanel; c += 16) __builtin_prefetch(w + kAhead * kPanel + c, 0, 3);  // a 64-byte line
    vec::V wv[kVecs];
    for (int c = 0; c < kVecs; ++c) wv[c] = vec::load(w + c * vec::kLanes);
    for (int r = 0; r < R; ++r) {
      const vec::V x = vec::splat(X[r * ldx + i]);
      for (int c = 0; c < kVecs; ++c) acc[r][c] = vec::fma(x, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float sum[kPanel];
    for (int c = 0; c < kVecs; ++c) vec::store(sum + c * vec::kLanes, acc[r][c]);
    for (int j = 0; j < kPanel; ++j) Y[r * kPanel + j] += sum[j];
  }
}

template <int R>
void panel_rows(const float* X, int64_t ldx, const float* P, int64_t n_in, double* Y) {
  for (int64_t i0 = 0; i0 < n_in; i0 += kChunk) panel_chunk<R>(X, ldx, P, i0, std::min(n_in, i0 + kChunk), Y);
}

void panel_block(int rows, const float* X, int64_t ldx, const float* P, int64_t n_in, double* Y) {
  switch (rows) {
    case 1: return panel_rows<1>(X, ldx, P, n_in, Y);
    case 2: return panel_rows<2>(X, ldx, P, n_in, Y);
    case 3: return panel_rows<3>(X, ldx, P, n_in, Y);
    case 4: return panel_rows<4>(X, ldx, P, n_in, Y);
    case 5: return panel_rows<5>(X, ldx, P, n_in, Y);
    case 6: return panel_rows<6>(X, ldx, P, n_in, Y);
  }
  TORCH_CHECK(false, "no kernel for a block of ", rows, " rows");
}

// Y (n, n_out) = bias + X (n, n_in) W, W packed (panels, n_in, PANEL) with n_out <= panels * PANEL.
// The panels go through at::parallel_for, which runs them in order on the calling thread here: the extension is
// built without OpenMP (kernel.FLAGS), so a pass takes one core whatever torch's thread count. An OpenMP build
// measured on the project's 2-vCPU machine (7 December 2026) made a one-token target pass 16% faster at 2
// threads and a 6-row pass 10%, with two sessions then contending for both cores. Every output is summed the same
// way whichever thread computes it.
// `backward` walks the panels from the last: the LM head is about the size of the core's L2 cache, so
// read the same way round every step none of it is still there; read in alternate directions, the
// panels one step read last are the next step's first (the small draft's step: 111 -> 101 us on 3
// December). Every output is the same either way.
void affine(const float* X, int64_t n, int64_t n_in, const at::Tensor& packed, const float* bias, int64_t n_out,
            float* Y, bool backward = false) {
  const float* W = packed.data_ptr<float>();
  const int64_t panels = packed.size(0);
  const int64_t grain = (100000 + n_in * kPanel - 1) / (n_in * kPanel);  // some 400 kB of weights a task at least
  at::parallel_for(0, panels, grain, [&](int64_t p0, int64_t p1) {
    std::vector<double> block(kRows * kPanel);
    for (int64_t q = p0; q < p1; ++q) {
      const int64_t p = backward ? panels - 1 - q : q;
      const float* P = W + p * n_in * kPanel;
      const int64_t j0 = p * kPanel, width = std::min<int64_t>(kPanel, n_out - j0);
      for (int64_t r0 = 0; r0 < n; r0 += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, n - r0));
        for (int r = 0; r < rows; ++r)
          for (int j = 0; j < kPanel; ++j) block[r * kPanel + j] = bias && j < width ? bias[j0 + j] : 0.0;
        panel_block(rows, X + r0 * n_in, n_in, P, n_in, block.data());
        for (int r = 0; r < rows; ++r)
          for (int64_t j = 0; j < width; ++j) Y[(r0 + r) * n_out + j0 + j] = static_cast<float>(block[r * kPanel + j]);
      }
    }
  });
}

void layer_norm(const float* x, const float* w, const float* b, int64_t n, double eps, float* y) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double inv = 1.0 / std::sqrt(var / n + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - mean) * inv * w[i] + b[i]);
}

// 1 / d! for d = 0..12: e^r's Taylor polynomial, enough for |r| <= ln2 / 2 in double.
constexpr double kInvFactorial[13] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                      1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};

// gelu_new, 0.5 u (1 + tanh(c (u + 0.044715 u^3))), in place on one row; tanh from e^2t in double, e^2t
// as 2^m e^r with |r| <= ln2 / 2 (plain arithmetic, so the loop vectorises, and every element takes the
// same operations whichever lane or position it is in).
void gelu_row(float* f, int64_t n, double c) {
  for (int64_t i = 0; i < n; ++i) {
    const double u = f[i];
    const double t = std::min(std::max(c * (u + 0.044715 * u * u * u), -20.0), 20.0);
    const double y = 2.0 * t, m = std::nearbyint(y * 1.4426950408889634);
    const double r = (y - m * 0.6931471803691238) - m * 1.9082149292705877e-10;
    double p = kInvFactorial[12];
    for (int d = 11; d >= 0; --d) p = p * r + kInvFactorial[d];
    const int64_t bits = (static_cast<int64_t>(m) + 1023) << 52;
    double two_m;
    std::memcpy(&two_m, &bits, sizeof two_m);
    const double e = p * two_m;
    f[i] = static_cast<float>(0.5 * u * (1.0 + (e - 1.0) / (e + 1.0)));
  }
}

// a . b in double, eight partial sums in a fixed order (no reordering left to the compiler).
double dot(const float* a, const float* b, int64_t n) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += static_cast<double>(a[i + j]) * static_cast<double>(b[i + j]);
  for (; i < n; ++i) part[0] += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

#if defined(__AVX512F__)
// Eight floats widened to doubles.
inline __m512d widen(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

// dot()'s eight partial sums, held in one register, joined in dot()'s order.
inline double join8(__m512d v) {
  alignas(64) double s[8];
  _mm512_store_pd(s, v);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
#endif

// scores[j] = q . k_j * scale, k_j at keys + ts[j] * stride, for every visible slot j: dot() slot by slot,
// or (AVX-512, 64-wide heads) the same operations in the same order for four slots at a time, so that
// four independent sums keep the processor busy instead of one sum waiting on its own additions.
void head_scores(const float* q, const float* keys, int64_t stride, const std::vector<int64_t>& ts, int64_t D,
                 double scale, double* scores) {
  const int64_t m = ts.size();
  int64_t j = 0;
#if defined(__AVX512F__)
  if (D == 64) {
    __m512d qd[8];
    for (int c = 0; c < 8; ++c) qd[c] = widen(q + 8 * c);
    for (; j + 4 <= m; j += 4) {
      const float* k[4] = {keys + ts[j] * stride, keys + ts[j + 1] * stride, keys + ts[j + 2] * stride,
                           keys + ts[j + 3] * stride};
      __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
      for (int c = 0; c < 8; ++c)
        for (int s = 0; s < 4; ++s) acc[s] = _mm512_add_pd(acc[s], _mm512_mul_pd(qd[c], widen(k[s] + 8 * c)));
      for (int s = 0; s < 4; ++s) scores[j + s] = join8(acc[s]) * scale;
    }
  }
#endif
  for (; j < m; ++j) scores[j] = dot(q, keys + ts[j] * stride, D) * scale;
}

// out = softmax(scores) . v over the visible slots, in slot order, in double: each output starts at zero
// and adds weight_j * v_j in slot order (AVX-512, 64-wide heads: all 64 sums held in registers at once).
void head_values(const double* weights, const float* values, int64_t stride, const std::vector<int64_t>& ts,
                 int64_t D, float* out) {
  const int64_t m = ts.size();
#if defined(__AVX512F__)
  if (D == 64) {
    __m512d acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = _mm512_setzero_pd();
    for (int64_t j = 0; j < m; ++j) {
      const float* v = values + ts[j] * stride;
      const __m512d w = _mm512_set1_pd(weights[j]);
      for (int c = 0; c < 8; ++c) acc[c] = _mm512_add_pd(acc[c], _mm512_mul_pd(w, widen(v + 8 * c)));
    }
    for (int c = 0; c < 8; ++c) _mm256_storeu_ps(out + 8 * c, _mm512_cvtpd_ps(acc[c]));
    return;
  }
#endif
  std::vector<double> o(D, 0.0);
  for (int64_t j = 0; j < m; ++j) {
    const float* v = values + ts[j] * stride;
    for (int64_t d = 0; d < D; ++d) o[d] += weights[j] * v[d];
  }
  for (int64_t d = 0; d < D; ++d) out[d] = static_cast<float>(o[d]);
}

// One head of one row: softmax(q k^T scale) v over the row's visible slots `ts`, in slot order, in double.
// kv: the head's first key in the row's stream (its value E floats further on); slots `stride` apart.
void attend(const float* q, const float* kv, int64_t stride, const std::vector<int64_t>& ts, int64_t D, double scale,
            std::vector<double>& p, float* out) {
  const int64_t E = stride / 2;
  p.resize(ts.size());
  head_scores(q, kv, stride, ts, D, scale, p.data());
  double top = -INFINITY, z = 0;
  for (double s : p) top = std::max(top, s);
  for (double& s : p) z += (s = std::exp(s - top));
  for (double& s : p) s = s / z;
  head_values(p.data(), kv + E, stride, ts, D, out);
}

constexpr int kPerLayer = 12;  // ln_1 w, b, c_attn packed, bias, c_proj packed, bias, ln_2 w, b, c_fc packed, bias, mlp c_proj packed, bias

// The checks every pass makes of its rows before writing anything (a kernel writing past its buffers would
// corrupt memory silently), and the slots each row attends to: its stream's slots 0..its own, or those its row
// of `visible` marks, in slot order.
std::vector<std::vector<int64_t>> rows_seen(const std::vector<int64_t>& streams, const std::vector<int64_t>& slots,
                                            const at::Tensor& visible, const at::Tensor& cache, int64_t n, int64_t E,
                                            int64_t layers) {
  TORCH_CHECK(n >= 1 && streams.size() == n && slots.size() == n, "a pass needs n >= 1 rows");
  TORCH_CHECK(cache.dim() == 4 && cache.size(0) == layers && cache.size(3) == 2 * E && cache.is_contiguous(),
              "the cache must be (layers, streams, capacity, 2E)");
  const int64_t n_streams = cache.size(1), capacity = cache.size(2);
  const bool masked = visible.numel() > 0;
  if (masked) TORCH_CHECK(visible.dim() == 2 && visible.size(0) == n && visible.scalar_type() == at::kBool &&
                          visible.is_contiguous() && visible.size(1) <= capacity, "visible must be (n, slots) bool");
  std::vector<std::vector<int64_t>> seen(n);
  for (int64_t r = 0; r < n; ++r) {
    TORCH_CHECK(streams[r] >= 0 && streams[r] < n_streams, "no stream ", streams[r]);
    TORCH_CHECK(slots[r] >= 0 && slots[r] < capacity && (!masked || slots[r] < visible.size(1)), "no cache slot ", slots[r]);
    if (masked) {
      const bool* m = visible.data_ptr<bool>() + r * visible.size(1);
      for (int64_t t = 0; t < visible.size(1); ++t) if (m[t]) seen[r].push_back(t);
    } else {
      for (int64_t t = 0; t <= slots[r]; ++t) seen[r].push_back(t);
    }
  }
  return seen;
}

// The blocks over the rows' inputs x (n, E), in place: per layer, each row's key and value written to its slot
// of its stream, attention over the slots it sees; tap(l + 1, x) after every block but the last.
template <typename Tap>
void run_blocks(std::vector<float>& x, int64_t n, int64_t E, const std::vector<std::vector<int64_t>>& seen,
                const std::vector<int64_t>& streams, const std::vector<int64_t>& slots, at::Tensor& cache,
                const std::vector<at::Tensor>& blocks, const std::vector<double>& scales, int64_t n_head, double eps,
                double gelu_c, Tap tap) {
  const int64_t D = E / n_head, layers = scales.size(), n_streams = cache.size(1), capacity = cache.size(2);
  std::vector<float> h(n * E), qkv(n * 3 * E), att(n * E), f(n * 4 * E), y(n * E);
  float* kv = cache.data_ptr<float>();
  std::vector<double> p;
  for (int64_t l = 0; l < layers; ++l) {
    const at::Tensor* b = &blocks[l * kPerLayer];
    auto ptr = [&](int i) { return b[i].data_ptr<float>(); };
    for (int64_t r = 0; r < n; ++r) layer_norm(&x[r * E], ptr(0), ptr(1), E, eps, &h[r * E]);
    affine(h.data(), n, E, b[2], ptr(3), 3 * E, qkv.data());
    float* layer = kv + l * n_streams * capacity * 2 * E;
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(layer + (streams[r] * capacity + slots[r]) * 2 * E, &qkv[r * 3 * E + E], 2 * E * sizeof(float));
    for (int64_t r = 0; r < n; ++r) {  // softmax(q k^T scale) v per head, over the row's visible slots in order
      const float* stream = layer + streams[r] * capacity * 2 * E;
      for (int64_t hd = 0; hd < n_head; ++hd)
        attend(&qkv[r * 3 * E + hd * D], stream + hd * D, 2 * E, seen[r], D, scales[l], p, &att[r * E + hd * D]);
    }
    affine(att.data(), n, E, b[4], ptr(5), E, y.data());
    for (int64_t i = 0; i < n * E; ++i) x[i] += y[i];
    for (int64_t r = 0; r < n; ++r) layer_norm(&x[r * E], ptr(6), ptr(7), E, eps, &h[r * E]);
    affine(h.data(), n, E, b[8], ptr(9), 4 * E, f.data());
    for (int64_t r = 0; r < n; ++r) gelu_row(&f[r * 4 * E], 4 * E, gelu_c);
    affine(f.data(), n, 4 * E, b[10], ptr(11), E, y.data());
    for (int64_t i = 0; i < n * E; ++i) x[i] += y[i];
    if (l + 1 < layers) tap(l + 1, x.data());
  }
}

// The pass. blocks: per layer ln_1 w, b, c_attn (packed), bias, c_proj (packed), bias, ln_2 w, b, c_fc
// (packed), bias, mlp c_proj (packed), bias; head: the LM head transposed and packed. visible: empty
// (each row sees its stream's slots 0..its slot) or (n, slots) bool, row r seeing the slots it marks.
// taps: the hidden states to hand back, numbered as transformers' hidden_states are (0 the embeddings, l the
// residual stream after block l, `layers` the final state after ln_f). Returns the logits (len(logit_rows), V)
// of the named rows and the tapped states of all rows, (n, len(taps) E), each row's taps side by side in the
// order named (an empty tensor for no taps).
std::vector<at::Tensor> gpt2_pass(const std::vector<int64_t>& tokens, const std::vector<int64_t>& positions,
                                  const std::vector<int64_t>& streams, const std::vector<int64_t>& slots,
                                  const at::Tensor& visible, at::Tensor cache, const std::vector<int64_t>& logit_rows,
                                  const std::vector<int64_t>& taps, const at::Tensor& wte, const at::Tensor& wpe,
                                  const std::vector<at::Tensor>& blocks, const std::vector<double>& scales,
                                  int64_t n_head, const at::Tensor& lnf_w, const at::Tensor& lnf_b,
                                  const at::Tensor& head, int64_t vocab, double eps, double gelu_c) {
  const int64_t n = tokens.size(), E = wte.size(1), layers = scales.size();
  TORCH_CHECK(positions.size() == n, "a position per row");
  const auto seen = rows_seen(streams, slots, visible, cache, n, E, layers);
  for (int64_t r = 0; r < n; ++r) {
    TORCH_CHECK(tokens[r] >= 0 && tokens[r] < wte.size(0), "token ", tokens[r], " is outside the vocabulary of ", wte.size(0));
    TORCH_CHECK(positions[r] >= 0 && positions[r] < wpe.size(0), "position ", positions[r], " is outside the model's ", wpe.size(0));
  }
  for (int64_t r : logit_rows) TORCH_CHECK(r >= 0 && r < n, "no row ", r, " to take logits of");
  for (int64_t t : taps) TORCH_CHECK(t >= 0 && t <= layers, "no hidden state ", t, " in a model of ", layers, " layers");
  at::InferenceMode guard;
  std::vector<float> x(n * E), h(n * E);
  for (int64_t r = 0; r < n; ++r) {
    const float* te = wte.data_ptr<float>() + tokens[r] * E;
    const float* pe = wpe.data_ptr<float>() + positions[r] * E;
    for (int64_t i = 0; i < E; ++i) x[r * E + i] = te[i] + pe[i];
  }
  const int64_t n_taps = taps.size();
  const auto options = wte.options();
  at::Tensor states = n_taps ? at::empty({n, n_taps * E}, options) : at::empty({0}, options);
  auto tap = [&](int64_t index, const float* rows) {  // rows (n, E): hidden state `index` of every row
    for (int64_t j = 0; j < n_taps; ++j)
      if (taps[j] == index)
        for (int64_t r = 0; r < n; ++r)
          std::memcpy(states.data_ptr<float>() + (r * n_taps + j) * E, rows + r * E, E * sizeof(float));
  };
  tap(0, x.data());
  run_blocks(x, n, E, seen, streams, slots, cache, blocks, scales, n_head, eps, gelu_c, tap);
  const int64_t m = logit_rows.size();
  std::vector<float> last(std::max<int64_t>(m, 1) * E);
  for (int64_t j = 0; j < m; ++j) {
    const int64_t r = logit_rows[j];
    layer_norm(&x[r * E], lnf_w.data_ptr<float>(), lnf_b.data_ptr<float>(), E, eps, &last[j * E]);
  }
  if (std::find(taps.begin(), taps.end(), layers) != taps.end()) {
    for (int64_t r = 0; r < n; ++r) layer_norm(&x[r * E], lnf_w.data_ptr<float>(), lnf_b.data_ptr<float>(), E, eps, &h[r * E]);
    tap(layers, h.data());
  }
  at::Tensor logits = at::empty({m, vocab}, options);
  if (m) affine(last.data(), m, E, head, nullptr, vocab, logits.data_ptr<float>(), positions[logit_rows[0]] % 2 == 1);
  return {logits, states};
}

// The blocks alone over given inputs (n, E) (the EAGLE drafter's decoder layer: no embedding, no final norm),
// the rows' keys and values cached and attended to as in gpt2_pass. Returns the outputs (n, E).
at::Tensor block_pass(const at::Tensor& inputs, const std::vector<int64_t>& streams, const std::vector<int64_t>& slots,
                      const at::Tensor& visible, at::Tensor cache, const std::vector<at::Tensor>& blocks,
                      const std::vector<double>& scales, int64_t n_head, double eps, double gelu_c) {
  TORCH_CHECK(inputs.dim() == 2 && inputs.scalar_type() == at::kFloat && inputs.is_contiguous(),
              "the inputs must be (n, E) float32");
  const int64_t n = inputs.size(0), E = inputs.size(1);
  TORCH_CHECK(blocks.size() == scales.size() * kPerLayer, "the blocks' tensors, ", kPerLayer, " per layer");
  const auto seen = rows_seen(streams, slots, visible, cache, n, E, scales.size());
  at::InferenceMode guard;
  std::vector<float> x(inputs.data_ptr<float>(), inputs.data_ptr<float>() + n * E);
  run_blocks(x, n, E, seen, streams, slots, cache, blocks, scales, n_head, eps, gelu_c, [](int64_t, const float*) {});
  at::Tensor out = at::empty({n, E}, inputs.options());
  std::memcpy(out.data_ptr<float>(), x.data(), n * E * sizeof(float));
  return out;
}

// Y (n, n_out) = bias + X (n, n_in) W, W packed by `pack` (bias empty for none): the pass's products alone.
at::Tensor affine_rows(const at::Tensor& X, const at::Tensor& packed, const at::Tensor& bias, int64_t n_out) {
  TORCH_CHECK(X.dim() == 2 && X.scalar_type() == at::kFloat && X.is_contiguous(), "X must be (n, n_in) float32");
  TORCH_CHECK(packed.dim() == 3 && packed.size(1) == X.size(1) && packed.size(2) == kPanel &&
              n_out <= packed.size(0) * kPanel, "the packed weight does not fit X and n_out");
  TORCH_CHECK(bias.numel() == 0 || (bias.numel() == n_out && bias.scalar_type() == at::kFloat && bias.is_contiguous()),
              "the bias must be empty or (n_out,) float32");
  at::InferenceMode guard;
  at::Tensor Y = at::empty({X.size(0), n_out}, X.options());
  if (X.size(0)) affine(X.data_ptr<float>(), X.size(0), X.size(1), packed, bias.numel() ? bias.data_ptr<float>() : nullptr,
                        n_out, Y.data_ptr<float>());
  return Y;
}

// W (n_in, n_out) as panels (ceil(n_out / PANEL), n_in, PANEL), the columns past n_out zero.
at::Tensor pack(const at::Tensor& W) {
  TORCH_CHECK(W.dim() == 2 && W.scalar_type() == at::kFloat, "pack takes a float32 matrix");
  const int64_t n_in = W.size(0), n_out = W.size(1), panels = (n_out + kPanel - 1) / kPanel;
  at::Tensor padded = at::zeros({n_in, panels * kPanel}, W.options());
  padded.narrow(1, 0, n_out).copy_(W);
  return padded.view({n_in, panels, kPanel}).permute({1, 0, 2}).contiguous();
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("gpt2_pass", &gpt2_pass, "GPT-2 over n rows, each row bit for bit its one-token pass",
        py::call_guard<py::gil_scoped_release>());
  m.def("block_pass", &block_pass, "the blocks over given inputs (n, E), keys and values cached as in gpt2_pass",
        py::call_guard<py::gil_scoped_release>());
  m.def("affine_rows", &affine_rows, "bias + X W for a packed W", py::call_guard<py::gil_scoped_release>());
  m.def("pack", &pack, "a weight (n_in, n_out) as the panels the pass streams");
  m.attr("PANEL") = kPanel;
  m.attr("ROWS") = kRows;
}
