// GPT-2 passes over one row, two ways (specdec_core/kernels/__init__.py says when each runs).
//
// exact_pass: the ATen ops of passes.GPT2Pass's pass, in its order, called from C++: the same kernels on the
//   same values, so the logits are bit for bit the Python pass's (and transformers'); what goes is the
//   Python between the ops.
// small_step: plain loops the compiler vectorises, for a model so small that the ops' own setup is most of
//   a pass (the bundled 1-layer d=128 draft: MKL's small matrix products cost 15 us each). The sums run
//   in another order than MKL's, so the logits are not the same bits: within 1e-5 of transformers' on the
//   bundled pair (tests/core/test_step_kernel.py).
//
// A layer's cache is (capacity, 3E): q | k | v of every fed slot; the new slot's q, k and v are written at
// row `past`. Conv1D weights are (n_in, n_out), row-major.
#include <torch/extension.h>

#include <cmath>
#include <vector>

namespace {

// The pass checks these before calling; a kernel writing past its buffers would corrupt memory silently.
void check_slot(int64_t token, int64_t past, const at::Tensor& wte, const at::Tensor& wpe, const std::vector<at::Tensor>& caches) {
  TORCH_CHECK(token >= 0 && token < wte.size(0), "token ", token, " is outside the vocabulary of ", wte.size(0));
  TORCH_CHECK(past >= 0 && past < wpe.size(0), "position ", past, " is outside the model's ", wpe.size(0));
  for (const auto& cache : caches) TORCH_CHECK(past < cache.size(0), "no cache slot ", past, " of ", cache.size(0));
}

using Tensors = std::vector<at::Tensor>;
constexpr int kPerBlock = 12;  // ln_1 w, b, c_attn w, b, c_proj w, b, ln_2 w, b, c_fc w, b, mlp c_proj w, b

// The pass over k new tokens after `past` cached slots, the logits of the last `keep`: the ATen ops of
// passes.GPT2Pass._one_row for one row of tokens (mask: none when k = 1, causal when nothing is cached,
// else the boolean (k, past + k) slice of the lower triangle), so the same bits. A verify pass, a
// prefill, and (k = 1) a one-token pass of every model but a small one.
at::Tensor exact_pass(const std::vector<int64_t>& tokens, int64_t past, int64_t keep, const at::Tensor& wte,
                      const at::Tensor& wpe, const Tensors& blocks, const std::vector<double>& scales,
                      const Tensors& heads, const Tensors& caches, const at::Tensor& causal,
                      const at::Tensor& lnf_w, const at::Tensor& lnf_b, const at::Tensor& lm_head, double eps, double gelu_c) {
  const int64_t k = tokens.size(), E = wte.size(1), end = past + k;
  TORCH_CHECK(k >= 1 && keep >= 1 && keep <= k, "a pass needs 1 <= keep <= k tokens");
  for (int64_t t : tokens) check_slot(t, end - 1, wte, wpe, caches);
  at::InferenceMode guard;
  const std::vector<int64_t> shape{E};
  at::Tensor ids = at::tensor(tokens, at::TensorOptions().dtype(at::kLong).device(wte.device()));
  at::Tensor x = at::embedding(wte, ids) + wpe.narrow(0, past, k);  // (k, E)
  std::optional<at::Tensor> mask;
  if (k > 1 && past) mask = causal.narrow(0, past, k).narrow(1, 0, end);
  const bool is_causal = k > 1 && !past;
  for (size_t l = 0; l < scales.size(); ++l) {
    const at::Tensor* b = &blocks[l * kPerBlock];
    at::Tensor rows = caches[l].narrow(0, past, k);
    at::addmm_out(rows, b[3], at::layer_norm(x, shape, b[0], b[1], eps).view({k, E}), b[2]);
    const at::Tensor& h = heads[l];
    at::Tensor att = at::scaled_dot_product_attention(h.select(0, 0).narrow(2, past, k), h.select(0, 1).narrow(2, 0, end),
                                                      h.select(0, 2).narrow(2, 0, end), mask, 0.0, is_causal, scales[l]);
    att = att.select(0, 0).transpose(0, 1).reshape({k, E});
    x = at::addmm(b[5], att, b[4]).view(x.sizes()).add_(x);
    at::Tensor f = at::addmm(b[9], at::layer_norm(x, shape, b[6], b[7], eps).view({k, E}), b[8]);
    at::Tensor t = at::pow(f, 3.0).mul_(0.044715).add_(f).mul_(gelu_c).tanh_().add_(1.0);
    f.mul_(0.5).mul_(t);
    x = at::addmm(b[11], f, b[10]).view(x.sizes()).add_(x);
  }
  return at::linear(at::layer_norm(x.narrow(0, k - keep, keep), shape, lnf_w, lnf_b, eps), lm_head);
}

// y = b + x W for one row x (n_in), W (n_in, n_out): W is read once, row by row, into n_out sums.
template <typename Acc>
void affine(const float* x, const float* W, const float* b, int64_t n_in, int64_t n_out, float* y, Acc* acc) {
  for (int64_t j = 0; j < n_out; ++j) acc[j] = b[j];
  for (int64_t i = 0; i < n_in; ++i) {
    const Acc xi = x[i];
    const float* w = W + i * n_out;
#pragma omp simd
    for (int64_t j = 0; j < n_out; ++j) acc[j] += xi * static_cast<Acc>(w[j]);
  }
  for (int64_t j = 0; j < n_out; ++j) y[j] = static_cast<float>(acc[j]);
}

template <typename Acc>
Acc dot(const float* a, const float* b, int64_t n) {
  Acc s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<Acc>(a[i]) * static_cast<Acc>(b[i]);
  return s;
}

void layer_norm(const float* x, const float* w, const float* b, int64_t n, double eps, float* y) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double inv = 1.0 / std::sqrt(var / n + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - mean) * inv * w[i] + b[i]);
}

// logits = head h for one row h (E): four rows of the head at a time, so the sums' latency overlaps.
// `backward` walks the groups of rows from the end: steps alternate directions, so the rows one step
// read last, still in the core's own cache, are the next step's first (the head alone is about the
// size of that cache; read the same way round every step, each step would find none of it there).
// Every row's sum is the same either way.
template <typename Acc>
void head_logits(const float* h, const float* head_w, int64_t V, int64_t E, float* y, bool backward) {
  const int64_t groups = V / 4;
  for (int64_t n = 0; n < groups; ++n) {
    const int64_t v = 4 * (backward ? groups - 1 - n : n);
    const float *w0 = head_w + v * E, *w1 = w0 + E, *w2 = w1 + E, *w3 = w2 + E;
    Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int64_t i = 0; i < E; ++i) {
      const Acc hi = h[i];
      s0 += hi * static_cast<Acc>(w0[i]);
      s1 += hi * static_cast<Acc>(w1[i]);
      s2 += hi * static_cast<Acc>(w2[i]);
      s3 += hi * static_cast<Acc>(w3[i]);
    }
    y[v] = static_cast<float>(s0), y[v + 1] = static_cast<float>(s1);
    y[v + 2] = static_cast<float>(s2), y[v + 3] = static_cast<float>(s3);
  }
  for (int64_t v = 4 * groups; v < V; ++v) y[v] = static_cast<float>(dot<Acc>(h, head_w + v * E, E));
}

template <typename Acc, typename HeadAcc>
at::Tensor small_step(int64_t token, int64_t past, const at::Tensor& wte, const at::Tensor& wpe,
                      const Tensors& blocks, const std::vector<double>& scales, const Tensors& caches,
                      int64_t n_head, const at::Tensor& lnf_w, const at::Tensor& lnf_b, const at::Tensor& lm_head,
                      double eps, double gelu_c) {
  check_slot(token, past, wte, wpe, caches);
  const int64_t E = wte.size(1), V = lm_head.size(0), D = E / n_head, slots = past + 1;
  std::vector<float> x(E), h(E), att(E), f(4 * E), t(4 * E);
  at::Tensor tanh_in = at::from_blob(t.data(), {4 * E}, wte.options());  // t, seen by ATen
  std::vector<Acc> acc(4 * E);
  std::vector<double> p(slots), o(D);
  const float* te = wte.data_ptr<float>() + token * E;
  const float* pe = wpe.data_ptr<float>() + past * E;
  for (int64_t i = 0; i < E; ++i) x[i] = te[i] + pe[i];
  for (size_t l = 0; l < scales.size(); ++l) {
    const float* w[kPerBlock];
    for (int k = 0; k < kPerBlock; ++k) w[k] = blocks[l * kPerBlock + k].data_ptr<float>();
    float* cache = caches[l].data_ptr<float>();
    float* row = cache + past * 3 * E;
    layer_norm(x.data(), w[0], w[1], E, eps, h.data());
    affine(h.data(), w[2], w[3], E, 3 * E, row, acc.data());
    for (int64_t head = 0; head < n_head; ++head) {  // softmax(q k^T scale) v, in double
      const float* q = row + head * D;
      double top = -INFINITY, z = 0;
      for (int64_t t = 0; t < slots; ++t) {
        p[t] = dot<double>(q, cache + t * 3 * E + E + head * D, D) * scales[l];
        top = std::max(top, p[t]);
      }
      for (int64_t t = 0; t < slots; ++t) z += (p[t] = std::exp(p[t] - top));
      std::fill(o.begin(), o.end(), 0.0);
      for (int64_t t = 0; t < slots; ++t) {
        const float* v = cache + t * 3 * E + 2 * E + head * D;
        const double weight = p[t] / z;
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) o[d] += weight * v[d];
      }
      for (int64_t d = 0; d < D; ++d) att[head * D + d] = static_cast<float>(o[d]);
    }
    affine(att.data(), w[4], w[5], E, E, h.data(), acc.data());
    for (int64_t i = 0; i < E; ++i) x[i] += h[i];
    layer_norm(x.data(), w[6], w[7], E, eps, h.data());
    affine(h.data(), w[8], w[9], E, 4 * E, f.data(), acc.data());
    // gelu_new, its tanh ATen's (vectorised, within an ulp) instead of one libm call per unit
    for (int64_t i = 0; i < 4 * E; ++i) {
      const double u = f[i];
      t[i] = static_cast<float>(gelu_c * (u + 0.044715 * u * u * u));
    }
    at::tanh_(tanh_in);
    for (int64_t i = 0; i < 4 * E; ++i) f[i] = static_cast<float>(0.5 * f[i] * (1.0 + t[i]));
    affine(f.data(), w[10], w[11], 4 * E, E, h.data(), acc.data());
    for (int64_t i = 0; i < E; ++i) x[i] += h[i];
  }
  layer_norm(x.data(), lnf_w.data_ptr<float>(), lnf_b.data_ptr<float>(), E, eps, h.data());
  at::Tensor logits = at::empty({1, V}, wte.options());
  float* y = logits.data_ptr<float>();
  head_logits<HeadAcc>(h.data(), lm_head.data_ptr<float>(), V, E, y, past % 2 == 1);
  return logits;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // Both run without the GIL: the arguments are converted before, the result after.
  m.def("exact_pass", &exact_pass, "k GPT-2 positions: the Python pass's ATen ops, bit for bit",
        py::call_guard<py::gil_scoped_release>());
  // fp64 sums in the blocks, fp32 in the head: the head is two thirds of the bundled draft's bytes, and
  // its fp64 sums cost 30% more time for 2e-6 less distance to transformers' logits.
  m.def("small_step", &small_step<double, float>, "one GPT-2 position in plain loops",
        py::call_guard<py::gil_scoped_release>());
}
