// Reference kernels for the ONNX signal ops: HannWindow, HammingWindow, BlackmanWindow, DFT,
// STFT and MelWeightMatrix. Transforms are direct O(n^2) sums in FP64 with exactly reduced
// angles, which is plenty for a reference.
#include <cmath>
#include <complex>
#include <numbers>

#include "core/ref/kernel.hpp"

namespace hpf::ref {
namespace {

using Complex = std::complex<double>;

// The float format an output_datatype code names; DOUBLE is held as F32.
Expected<DType> output_type(const KernelContext& c) {
  const int64_t code = c.attr_int("output_datatype");
  auto t = ir::dtype_from_onnx(code == 11 ? 1 : code);
  if (!t.ok() || !is_float(*t)) return c.error("output_datatype " + std::to_string(code) + " is not a float type");
  return *t;
}

Expected<int64_t> int_scalar(const KernelContext& c, size_t k, const char* what) {
  const Buf& b = c.in(k);
  if (b.numel() != 1) return c.error(std::string(what) + " must be a scalar, has shape " + shape_string(b.shape));
  if (b.is_float()) return c.error(std::string(what) + " must be an integer");
  return b.i[0];
}

// Generalised cosine window sum_k a_k cos(2 pi k n / N), N = size (periodic) or size - 1.
Status window_kernel(KernelContext& c, std::vector<double> coeffs) {
  HPF_ASSIGN_OR_RETURN(DType t, output_type(c));
  HPF_ASSIGN_OR_RETURN(int64_t size, int_scalar(c, 0, "size"));
  if (size < 0) return c.error("size must be >= 0, is " + std::to_string(size));
  const double n_1 = c.attr_int("periodic") != 0 ? double(size) : double(size - 1);
  Buf y = Buf::floats({size}, t);
  for (int64_t n = 0; n < size; ++n) {
    double v = 0;
    for (size_t k = 0; k < coeffs.size(); ++k)
      v += coeffs[k] * (n_1 == 0 ? 1.0 : std::cos(2 * std::numbers::pi * double(k) * double(n) / n_1));
    y.f[n] = static_cast<float>(v);
  }
  c.out[0] = std::move(y);
  return {};
}

// e^(sign * 2 pi i * k / n), with k reduced mod n first so large products stay exact.
Complex twiddle(int64_t k, int64_t n, double sign) {
  const double a = sign * 2 * std::numbers::pi * double(k % n) / double(n);
  return {std::cos(a), std::sin(a)};
}

// Length-`len` DFT of `in` (shorter inputs are zero padded, longer ones truncated); `bins`
// outputs; inverse divides by len.
void dft_1d(const std::vector<Complex>& in, int64_t len, int64_t bins, bool inverse, std::vector<Complex>& out) {
  out.assign(bins, Complex());
  const int64_t used = std::min<int64_t>(len, static_cast<int64_t>(in.size()));
  for (int64_t k = 0; k < bins; ++k) {
    Complex s;
    for (int64_t j = 0; j < used; ++j) s += in[j] * twiddle(k * j, len, inverse ? 1.0 : -1.0);
    out[k] = inverse ? s / double(len) : s;
  }
}

Status dft_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer input");
  const int64_t r = x.rank();
  if (r < 2 || (x.shape.back() != 1 && x.shape.back() != 2))
    return c.error("input must be [..., 1 or 2] (real or complex), has shape " + shape_string(x.shape));
  int64_t axis = c.attr_int("axis");
  if (axis < -r || axis > r - 2 || axis == -1)
    return c.error("axis " + std::to_string(axis) + " is out of range for input " + shape_string(x.shape));
  if (axis < 0) axis += r;
  const bool inverse = c.attr_int("inverse") != 0, onesided = c.attr_int("onesided") != 0;
  if (inverse && onesided) return c.unsupported("onesided inverse DFT");
  int64_t len = x.shape[axis];
  if (c.has(1)) {
    HPF_ASSIGN_OR_RETURN(len, int_scalar(c, 1, "dft_length"));
    if (len < 1) return c.error("dft_length must be >= 1, is " + std::to_string(len));
  }
  const int64_t bins = onesided ? len / 2 + 1 : len;
  const bool complex_in = x.shape.back() == 2;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.shape[k];
  for (int64_t k = axis + 1; k < r - 1; ++k) inner *= x.shape[k];
  const int64_t n_in = x.shape[axis];
  std::vector<int64_t> out_shape = x.shape;
  out_shape[axis] = bins;
  out_shape.back() = 2;
  Buf y = Buf::floats(out_shape, x.dtype);
  std::vector<Complex> line(n_in), res;
  const int64_t cw = complex_in ? 2 : 1;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n_in; ++j) {
        const float* p = x.f.data() + ((o * n_in + j) * inner + i) * cw;
        line[j] = Complex(p[0], complex_in ? p[1] : 0.0f);
      }
      dft_1d(line, len, bins, inverse, res);
      for (int64_t k = 0; k < bins; ++k) {
        float* q = y.f.data() + ((o * bins + k) * inner + i) * 2;
        q[0] = static_cast<float>(res[k].real());
        q[1] = static_cast<float>(res[k].imag());
      }
    }
  c.out[0] = std::move(y);
  return {};
}

Status stft_kernel(KernelContext& c) {
  const Buf& x = c.in(0);
  if (!x.is_float()) return c.unsupported("integer signal");
  if (x.rank() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    return c.error("signal must be [batch, length, 1 or 2], has shape " + shape_string(x.shape));
  HPF_ASSIGN_OR_RETURN(int64_t step, int_scalar(c, 1, "frame_step"));
  if (step < 1) return c.error("frame_step must be >= 1, is " + std::to_string(step));
  const int64_t batch = x.shape[0], length = x.shape[1], cw = x.shape[2];
  const Buf* window = c.has(2) ? &c.in(2) : nullptr;
  if (window && window->rank() != 1) return c.error("window must be 1-D, has shape " + shape_string(window->shape));
  int64_t frame = window ? window->numel() : length;
  if (c.has(3)) {
    HPF_ASSIGN_OR_RETURN(frame, int_scalar(c, 3, "frame_length"));
  }
  if (frame < 1 || frame > length)
    return c.error("frame_length " + std::to_string(frame) + " must be in [1, " + std::to_string(length) + "]");
  const int64_t win = window ? window->numel() : frame;
  const int64_t frames = (length - frame) / step + 1;
  const int64_t bins = c.attr_int("onesided") != 0 ? frame / 2 + 1 : frame;
  Buf y = Buf::floats({batch, frames, bins, 2}, x.dtype);
  std::vector<Complex> seg(win), res;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < win; ++j) {
        const int64_t s = f * step + j;
        const double w = window ? window->get(j) : 1.0;
        if (s >= length) {
          seg[j] = Complex();
          continue;
        }
        const float* p = x.f.data() + (b * length + s) * cw;
        seg[j] = Complex(p[0], cw == 2 ? p[1] : 0.0f) * w;
      }
      dft_1d(seg, frame, bins, false, res);
      for (int64_t k = 0; k < bins; ++k) {
        float* q = y.f.data() + ((b * frames + f) * bins + k) * 2;
        q[0] = static_cast<float>(res[k].real());
        q[1] = static_cast<float>(res[k].imag());
      }
    }
  c.out[0] = std::move(y);
  return {};
}

// Triangular filters evenly spaced on the mel scale, at the integer FFT bins the ONNX reference
// computes: floor((dft_length + 1) * hz / sample_rate).
Status mel_weight_matrix_kernel(KernelContext& c) {
  HPF_ASSIGN_OR_RETURN(DType t, output_type(c));
  HPF_ASSIGN_OR_RETURN(int64_t mels, int_scalar(c, 0, "num_mel_bins"));
  HPF_ASSIGN_OR_RETURN(int64_t len, int_scalar(c, 1, "dft_length"));
  HPF_ASSIGN_OR_RETURN(int64_t rate, int_scalar(c, 2, "sample_rate"));
  if (c.in(3).numel() != 1 || c.in(4).numel() != 1) return c.error("lower/upper_edge_hertz must be scalars");
  if (mels < 1 || len < 1 || rate < 1) return c.error("num_mel_bins, dft_length and sample_rate must be positive");
  const double lo = c.in(3).get(0), hi = c.in(4).get(0);
  const int64_t spec = len / 2 + 1;
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / double(mels + 2);
  std::vector<int64_t> bin(mels + 2);
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double hz = 700.0 * (std::pow(10.0, (double(k) * step + lo_mel) / 2595.0) - 1.0);
    bin[k] = static_cast<int64_t>(std::floor(double(len + 1) * hz / double(rate)));
  }
  Buf y = Buf::floats({spec, mels}, t);
  auto set = [&](int64_t row, int64_t col, double v) -> Status {
    if (row < 0 || row >= spec) return c.error("a mel filter reaches FFT bin " + std::to_string(row) + " of " + std::to_string(spec) + " (upper_edge_hertz above the Nyquist rate?)");
    y.f[row * mels + col] = static_cast<float>(v);
    return {};
  };
  for (int64_t m = 0; m < mels; ++m) {
    const int64_t l = bin[m], ctr = bin[m + 1], h = bin[m + 2];
    if (ctr == l) {
      HPF_RETURN_IF_ERROR(set(ctr, m, 1.0));
    } else {
      for (int64_t j = l; j <= ctr; ++j) HPF_RETURN_IF_ERROR(set(j, m, double(j - l) / double(ctr - l)));
    }
    for (int64_t j = ctr; j < h; ++j) HPF_RETURN_IF_ERROR(set(j, m, double(h - j) / double(h - ctr)));
  }
  c.out[0] = std::move(y);
  return {};
}

}  // namespace

void add_signal_kernels(KernelTable& t) {
  t["HannWindow"] = [](KernelContext& c) { return window_kernel(c, {0.5, -0.5}); };
  t["HammingWindow"] = [](KernelContext& c) { return window_kernel(c, {25.0 / 46.0, -21.0 / 46.0}); };
  t["BlackmanWindow"] = [](KernelContext& c) { return window_kernel(c, {0.42, -0.5, 0.08}); };
  t["DFT"] = dft_kernel;
  t["STFT"] = stft_kernel;
  t["MelWeightMatrix"] = mel_weight_matrix_kernel;
}

}  // namespace hpf::ref
