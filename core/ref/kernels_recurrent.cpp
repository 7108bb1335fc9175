// Reference kernels for the ONNX recurrent ops RNN, GRU and LSTM: every direction, activation
// (with its alpha/beta), clip, layout, sequence_lens, initial states, peepholes, GRU's
// linear_before_reset and LSTM's input_forget. Gates and states are computed in FP64.
#include <algorithm>
#include <cmath>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

// One activation function of the recurrent ops' `activations` attribute.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(x, 0.0);
    if (name == "Affine") return alpha * x + beta;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    if (name == "Softsign") return x / (1.0 + std::abs(x));
    return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));  // Softplus
  }
};

// ONNX's default alpha/beta of an activation (those of the op of the same name); nullopt for an
// unknown name.
std::optional<Activation> activation_defaults(const std::string& name) {
  static const std::map<std::string, Activation> known = {
      {"Sigmoid", {"Sigmoid"}},           {"Tanh", {"Tanh"}},
      {"Relu", {"Relu"}},                 {"Affine", {"Affine", 1.0, 0.0}},
      {"LeakyRelu", {"LeakyRelu", 0.01}}, {"ThresholdedRelu", {"ThresholdedRelu", 1.0}},
      {"ScaledTanh", {"ScaledTanh", 1.0, 1.0}}, {"HardSigmoid", {"HardSigmoid", 0.2, 0.5}},
      {"Elu", {"Elu", 1.0}},              {"Softsign", {"Softsign"}},
      {"Softplus", {"Softplus"}}};
  auto it = known.find(name);
  if (it == known.end()) return std::nullopt;
  return it->second;
}
bool takes_alpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool takes_beta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }

// The activations per direction (`per_dir` each), from the attributes or the op's defaults;
// activation_alpha/beta values are taken in order by the activations that use them.
Expected<std::vector<Activation>> activations(const KernelContext& c, std::vector<std::string> defaults,
                                              int64_t dirs) {
  std::vector<std::string> names;
  if (c.has_attr("activations")) {
    names = c.attr_strings("activations");
  } else {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * static_cast<size_t>(dirs))
    return c.error("activations has " + std::to_string(names.size()) + " entries, expected " +
                   std::to_string(defaults.size() * dirs) + " (" + std::to_string(defaults.size()) + " per direction)");
  const std::vector<float> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  size_t ia = 0, ib = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    auto a = activation_defaults(n);
    if (!a) return c.unsupported("activation '" + n + "'");
    if (takes_alpha(n) && ia < alphas.size()) a->alpha = alphas[ia++];
    if (takes_beta(n) && ib < betas.size()) a->beta = betas[ib++];
    out.push_back(*a);
  }
  return out;
}

enum class Cell { rnn, gru, lstm };

// Everything a direction's sweep needs, as FP64 in the canonical layout 0.
struct Problem {
  Cell cell;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  std::vector<double> x;             // [seq][batch][input]
  std::vector<int64_t> lens;         // [batch]
  std::vector<double> w, r, b, p;    // per direction: [G*H][I], [G*H][H], [2*G*H], [3*H]
  std::vector<double> h0, c0;        // [dirs][batch][H]
  std::optional<double> clip;
  bool linear_before_reset = false, input_forget = false;
  std::vector<Activation> acts;      // per direction: f, g (, h)
};

// A float input as doubles, or zeros of `n` when absent; error when its size is not n.
Expected<std::vector<double>> doubles(const KernelContext& c, size_t k, int64_t n, const char* what) {
  if (!c.has(k)) return std::vector<double>(n, 0.0);
  const Buf& v = c.in(k);
  if (v.numel() != n)
    return c.error(std::string(what) + " " + shape_string(v.shape) + " has " + std::to_string(v.numel()) +
                   " values, expected " + std::to_string(n));
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = v.get(i);
  return out;
}

// Layout 1 keeps batch first in X and in the states: [batch][A][B] <-> [A][batch][B].
std::vector<double> swap01(const std::vector<double>& v, int64_t d0, int64_t d1, int64_t inner) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      std::copy_n(v.begin() + (i * d1 + j) * inner, inner, out.begin() + (j * d0 + i) * inner);
  return out;
}

Expected<Problem> load(KernelContext& c, Cell cell) {
  Problem pr;
  pr.cell = cell;
  pr.gates = cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1;
  const Buf &x = c.in(0), &w = c.in(1), &r = c.in(2);
  if (!x.is_float() || !w.is_float() || !r.is_float()) return c.unsupported("integer X, W or R");
  const std::string dir = c.attr_string("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return c.error("direction must be forward, reverse or bidirectional, is '" + dir + "'");
  pr.dirs = dir == "bidirectional" ? 2 : 1;
  const int64_t layout = c.attr_int("layout");
  if (layout != 0 && layout != 1) return c.error("layout must be 0 or 1, is " + std::to_string(layout));
  if (x.rank() != 3) return c.error("X must have rank 3, has shape " + shape_string(x.shape));
  if (w.rank() != 3 || w.shape[0] != pr.dirs)
    return c.error("W " + shape_string(w.shape) + " must be [" + std::to_string(pr.dirs) + ", gates x hidden, input]");
  pr.seq = layout == 0 ? x.shape[0] : x.shape[1];
  pr.batch = layout == 0 ? x.shape[1] : x.shape[0];
  pr.input = x.shape[2];
  pr.hidden = c.has_attr("hidden_size") ? c.attr_int("hidden_size") : w.shape[1] / pr.gates;
  const int64_t gh = pr.gates * pr.hidden, H = pr.hidden, B = pr.batch;
  if (w.shape[1] != gh || w.shape[2] != pr.input)
    return c.error("W " + shape_string(w.shape) + " must be [" + std::to_string(pr.dirs) + ", " + std::to_string(gh) +
                   ", " + std::to_string(pr.input) + "]");
  HPF_ASSIGN_OR_RETURN(pr.x, doubles(c, 0, x.numel(), "X"));
  if (layout == 1) pr.x = swap01(pr.x, B, pr.seq, pr.input);
  HPF_ASSIGN_OR_RETURN(pr.w, doubles(c, 1, pr.dirs * gh * pr.input, "W"));
  HPF_ASSIGN_OR_RETURN(pr.r, doubles(c, 2, pr.dirs * gh * H, "R"));
  HPF_ASSIGN_OR_RETURN(pr.b, doubles(c, 3, pr.dirs * 2 * gh, "B"));
  pr.lens.assign(B, pr.seq);
  if (c.has(4)) {
    const Buf& l = c.in(4);
    if (l.numel() != B) return c.error("sequence_lens must have " + std::to_string(B) + " values");
    for (int64_t b = 0; b < B; ++b) {
      pr.lens[b] = static_cast<int64_t>(l.get(b));
      if (pr.lens[b] < 0 || pr.lens[b] > pr.seq)
        return c.error("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(pr.lens[b]) +
                       " is outside [0, " + std::to_string(pr.seq) + "]");
    }
  }
  HPF_ASSIGN_OR_RETURN(pr.h0, doubles(c, 5, pr.dirs * B * H, "initial_h"));
  if (layout == 1 && c.has(5)) pr.h0 = swap01(pr.h0, B, pr.dirs, H);
  if (cell == Cell::lstm) {
    HPF_ASSIGN_OR_RETURN(pr.c0, doubles(c, 6, pr.dirs * B * H, "initial_c"));
    if (layout == 1 && c.has(6)) pr.c0 = swap01(pr.c0, B, pr.dirs, H);
    HPF_ASSIGN_OR_RETURN(pr.p, doubles(c, 7, pr.dirs * 3 * H, "P"));
    pr.input_forget = c.attr_int("input_forget") != 0;
  }
  if (cell == Cell::gru) pr.linear_before_reset = c.attr_int("linear_before_reset") != 0;
  if (c.has_attr("clip")) {
    pr.clip = c.attr_float("clip");
    if (!(*pr.clip > 0)) return c.error("clip must be positive");
  }
  const std::vector<std::string> defaults = cell == Cell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                : std::vector<std::string>{"Tanh"};
  HPF_ASSIGN_OR_RETURN(pr.acts, activations(c, defaults, pr.dirs));
  return pr;
}

// out[k] = bias[k] + sum_j m[k][j] v[j] for k < rows.
void affine(const double* m, const double* v, const double* bias, int64_t rows, int64_t cols, double* out) {
  for (int64_t k = 0; k < rows; ++k) {
    double s = bias[k];
    for (int64_t j = 0; j < cols; ++j) s += m[k * cols + j] * v[j];
    out[k] = s;
  }
}

// Runs direction d (reverse when `backward`) over every batch entry; writes Y ([seq][dirs][batch][H],
// zeros past a sequence's end), the final hidden and cell states ([dirs][batch][H]).
void sweep(const Problem& pr, int64_t d, bool backward, std::vector<double>& y, std::vector<double>& yh,
           std::vector<double>& yc) {
  const int64_t H = pr.hidden, I = pr.input, G = pr.gates, gh = G * H;
  const double* W = pr.w.data() + d * gh * I;
  const double* R = pr.r.data() + d * gh * H;
  const double* Wb = pr.b.data() + d * 2 * gh;
  const double* Rb = Wb + gh;
  const double* P = pr.p.empty() ? nullptr : pr.p.data() + d * 3 * H;
  const size_t na = pr.acts.size() / pr.dirs;
  const Activation* act = pr.acts.data() + d * na;
  auto clip = [&](double v) { return pr.clip ? std::clamp(v, -*pr.clip, *pr.clip) : v; };
  std::vector<double> xw(gh), hr(gh), h(H), cst(H), tmp(H);
  for (int64_t b = 0; b < pr.batch; ++b) {
    std::copy_n(pr.h0.begin() + (d * pr.batch + b) * H, H, h.begin());
    if (pr.cell == Cell::lstm) std::copy_n(pr.c0.begin() + (d * pr.batch + b) * H, H, cst.begin());
    const int64_t len = pr.lens[b];
    for (int64_t s = 0; s < len; ++s) {
      const int64_t t = backward ? len - 1 - s : s;
      affine(W, pr.x.data() + (t * pr.batch + b) * I, Wb, gh, I, xw.data());
      affine(R, h.data(), Rb, gh, H, hr.data());
      if (pr.cell == Cell::rnn) {
        for (int64_t k = 0; k < H; ++k) h[k] = act[0](clip(xw[k] + hr[k]));
      } else if (pr.cell == Cell::gru) {
        // Gate order z, r, h.
        std::vector<double> z(H), rg(H);
        for (int64_t k = 0; k < H; ++k) {
          z[k] = act[0](clip(xw[k] + hr[k]));
          rg[k] = act[0](clip(xw[H + k] + hr[H + k]));
        }
        if (pr.linear_before_reset) {
          for (int64_t k = 0; k < H; ++k) tmp[k] = xw[2 * H + k] + rg[k] * hr[2 * H + k];
        } else {
          std::vector<double> rh(H);
          for (int64_t k = 0; k < H; ++k) rh[k] = rg[k] * h[k];
          affine(R + 2 * H * H, rh.data(), Rb + 2 * H, H, H, tmp.data());
          for (int64_t k = 0; k < H; ++k) tmp[k] += xw[2 * H + k];
        }
        for (int64_t k = 0; k < H; ++k) {
          const double hh = act[1](clip(tmp[k]));
          h[k] = (1 - z[k]) * hh + z[k] * h[k];
        }
      } else {
        // Gate order i, o, f, c; peepholes P in order i, o, f.
        for (int64_t k = 0; k < H; ++k) {
          const double pi = P ? P[k] : 0, po = P ? P[H + k] : 0, pf = P ? P[2 * H + k] : 0;
          const double ig = act[0](clip(xw[k] + hr[k] + pi * cst[k]));
          const double fg = pr.input_forget ? 1.0 - ig : act[0](clip(xw[2 * H + k] + hr[2 * H + k] + pf * cst[k]));
          const double cg = act[1](clip(xw[3 * H + k] + hr[3 * H + k]));
          cst[k] = fg * cst[k] + ig * cg;
          const double og = act[0](clip(xw[H + k] + hr[H + k] + po * cst[k]));
          h[k] = og * act[2](cst[k]);
        }
      }
      std::copy(h.begin(), h.end(), y.begin() + ((t * pr.dirs + d) * pr.batch + b) * H);
    }
    std::copy(h.begin(), h.end(), yh.begin() + (d * pr.batch + b) * H);
    if (pr.cell == Cell::lstm) std::copy(cst.begin(), cst.end(), yc.begin() + (d * pr.batch + b) * H);
  }
}

Buf to_float_buf(const std::vector<double>& v, std::vector<int64_t> shape, DType t) {
  Buf out = Buf::floats(std::move(shape), t);
  for (size_t k = 0; k < v.size(); ++k) out.f[k] = static_cast<float>(v[k]);
  return out;
}

Status recurrent_kernel(KernelContext& c, Cell cell) {
  HPF_ASSIGN_OR_RETURN(Problem pr, load(c, cell));
  const int64_t H = pr.hidden, B = pr.batch, D = pr.dirs;
  std::vector<double> y(pr.seq * D * B * H, 0.0), yh(D * B * H, 0.0), yc(D * B * H, 0.0);
  const std::string dir = c.attr_string("direction");
  for (int64_t d = 0; d < D; ++d) sweep(pr, d, dir == "reverse" || d == 1, y, yh, yc);
  const DType t = c.in(0).dtype;
  const bool batch_first = c.attr_int("layout") == 1;
  if (!c.out.empty()) {
    // [seq][dirs][batch][H] -> [batch][seq][dirs][H] for layout 1.
    if (batch_first) y = swap01(y, pr.seq * D, B, H);
    c.out[0] = to_float_buf(y, batch_first ? std::vector<int64_t>{B, pr.seq, D, H} : std::vector<int64_t>{pr.seq, D, B, H}, t);
  }
  const std::vector<int64_t> state = batch_first ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
  if (c.out.size() > 1) c.out[1] = to_float_buf(batch_first ? swap01(yh, D, B, H) : yh, state, t);
  if (c.out.size() > 2) c.out[2] = to_float_buf(batch_first ? swap01(yc, D, B, H) : yc, state, t);
  return {};
}

}  // namespace

void add_recurrent_kernels(KernelTable& t) {
  t["RNN"] = [](KernelContext& c) { return recurrent_kernel(c, Cell::rnn); };
  t["GRU"] = [](KernelContext& c) { return recurrent_kernel(c, Cell::gru); };
  t["LSTM"] = [](KernelContext& c) { return recurrent_kernel(c, Cell::lstm); };
}

}  // namespace hpf::ref
