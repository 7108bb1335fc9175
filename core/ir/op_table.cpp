// The op table: one row per op (ONNX semantics, latest opset form, with the attributes older
// opsets used where those later became inputs).
#include "core/ir/op_table.hpp"

#include <algorithm>
#include <map>

#include "core/ir/shape_functions.hpp"

namespace hpf::ir {
namespace {

constexpr int kMany = 1 << 20;  // variadic

using D = DType;
// Candidate formats per kind of work. Matrix units take every float format plus integer
// quantisation; vector work runs in FP32, BF16 or FP16; data movement takes whatever it gets.
const std::vector<DType> kMatrix = {D::F32, D::TF32, D::BF16, D::F16, D::F8E4M3, D::F8E5M2, D::I8, D::I4};
const std::vector<DType> kConv = {D::F32, D::TF32, D::BF16, D::F16, D::F8E4M3, D::F8E5M2, D::I8};
const std::vector<DType> kVector = {D::F32, D::BF16, D::F16};
const std::vector<DType> kAny = {D::F32, D::TF32, D::BF16, D::F16, D::F8E4M3, D::F8E5M2,
                                 D::I8, D::U8, D::I4, D::I32, D::I64, D::BOOL};
const std::vector<DType> kF32 = {D::F32};

AttrDef i(std::string n, int64_t d) { return {std::move(n), AttrType::int_, AttrValue(d)}; }
AttrDef f(std::string n, float d) { return {std::move(n), AttrType::float_, AttrValue(d)}; }
AttrDef s(std::string n, std::string d) { return {std::move(n), AttrType::string, AttrValue(std::move(d))}; }
AttrDef ints(std::string n) { return {std::move(n), AttrType::ints, std::nullopt}; }
AttrDef opt_int(std::string n) { return {std::move(n), AttrType::int_, std::nullopt}; }
AttrDef opt_float(std::string n) { return {std::move(n), AttrType::float_, std::nullopt}; }
AttrDef req_int(std::string n) { return {std::move(n), AttrType::int_, std::nullopt, true}; }
AttrDef opt_tensor(std::string n) { return {std::move(n), AttrType::tensor, std::nullopt}; }
AttrDef floats(std::string n) { return {std::move(n), AttrType::floats, std::nullopt}; }
AttrDef strings(std::string n) { return {std::move(n), AttrType::strings, std::nullopt}; }
AttrDef graph(std::string n) { return {std::move(n), AttrType::graph, std::nullopt, true}; }

std::vector<AttrDef> window_attrs() {
  return {s("auto_pad", "NOTSET"), ints("dilations"), ints("kernel_shape"), ints("pads"), ints("strides")};
}

OpDef row(std::string name, int in_min, int in_max, int out_min, int out_max, OpClass cls,
          std::vector<DType> prec, ShapeFn fn, std::vector<AttrDef> attrs = {},
          std::vector<int> wide = {}, std::string wide_internals = "") {
  OpDef d;
  d.name = std::move(name);
  d.min_inputs = in_min;
  d.max_inputs = in_max;
  d.min_outputs = out_min;
  d.max_outputs = out_max;
  d.op_class = cls;
  d.precisions = std::move(prec);
  d.infer = std::move(fn);
  d.attrs = std::move(attrs);
  d.wide_inputs = std::move(wide);
  d.wide_internals = std::move(wide_internals);
  return d;
}

std::vector<OpDef> build_table() {
  using C = OpClass;
  namespace sf = shape_fn;
  std::vector<OpDef> t;
  auto unary = [&](const char* n, std::vector<AttrDef> a = {}) {
    t.push_back(row(n, 1, 1, 1, 1, C::elementwise, kVector, sf::same_as_input0, std::move(a)));
  };
  auto binary = [&](const char* n) {
    t.push_back(row(n, 2, 2, 1, 1, C::elementwise, kVector, sf::broadcast));
  };
  // Elementwise arithmetic and activations.
  for (const char* n : {"Add", "Sub", "Mul", "Div"}) binary(n);
  t.push_back(row("Pow", 2, 2, 1, 1, C::elementwise, kF32, sf::broadcast_mixed));
  t.push_back(row("Max", 1, kMany, 1, 1, C::elementwise, kVector, sf::broadcast));
  t.push_back(row("Min", 1, kMany, 1, 1, C::elementwise, kVector, sf::broadcast));
  for (const char* n : {"Sqrt", "Neg", "Abs", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Relu", "HardSwish", "Identity"})
    unary(n);
  unary("HardSigmoid", {f("alpha", 0.2f), f("beta", 0.5f)});
  unary("LeakyRelu", {f("alpha", 0.01f)});
  unary("Gelu", {s("approximate", "none")});
  // Clip: min/max are inputs from opset 11, attributes before.
  t.push_back(row("Clip", 1, 3, 1, 1, C::elementwise, kVector, sf::same_as_input0,
                  {opt_float("min"), opt_float("max")}));
  t.push_back(row("Where", 3, 3, 1, 1, C::elementwise, kAny, sf::where));
  for (const char* n : {"Equal", "Less", "Greater"})
    t.push_back(row(n, 2, 2, 1, 1, C::elementwise, kAny, sf::compare));
  t.push_back(row("Not", 1, 1, 1, 1, C::elementwise, {D::BOOL}, sf::logical_not));
  for (const char* n : {"And", "Or", "Xor"})
    t.push_back(row(n, 2, 2, 1, 1, C::elementwise, {D::BOOL}, sf::compare));
  t.push_back(row("Mod", 2, 2, 1, 1, C::elementwise, kVector, sf::broadcast, {i("fmod", 0)}));
  for (const char* n : {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}) unary(n);
  for (const char* n : {"Sin", "Cos", "Ceil", "Floor", "Round", "Reciprocal", "Sign", "Softplus", "Softsign", "Mish"})
    unary(n);
  unary("Elu", {f("alpha", 1.0f)});
  unary("Selu", {f("alpha", 1.67326319217681884765625f), f("gamma", 1.05070102214813232421875f)});
  unary("ThresholdedRelu", {f("alpha", 1.0f)});
  t.push_back(row("IsNaN", 1, 1, 1, 1, C::elementwise, kVector, sf::to_bool));
  t.push_back(row("IsInf", 1, 1, 1, 1, C::elementwise, kVector, sf::to_bool,
                  {i("detect_negative", 1), i("detect_positive", 1)}));
  // Dropout in inference: output 0 is the input, the optional mask all true (ratio was an
  // attribute before opset 12, an input after).
  t.push_back(row("Dropout", 1, 3, 1, 2, C::elementwise, kAny, sf::dropout, {f("ratio", 0.5f), opt_int("seed")},
                  {1, 2}));
  t.push_back(row("Cast", 1, 1, 1, 1, C::elementwise, kAny, sf::cast, {req_int("to"), i("saturate", 1)}));
  t.push_back(row("Sum", 1, kMany, 1, 1, C::elementwise, kVector, sf::broadcast));
  t.push_back(row("Mean", 1, kMany, 1, 1, C::elementwise, kVector, sf::broadcast));
  t.push_back(row("CastLike", 2, 2, 1, 1, C::elementwise, kAny, sf::cast_like, {i("saturate", 1)}));

  // Matrix work: FP64 accumulation in the reference, FP32 or wider on devices unless a plan says
  // otherwise.
  t.push_back(row("MatMul", 2, 2, 1, 1, C::matmul, kMatrix, sf::matmul, {}, {}, "dot products"));
  t.push_back(row("Gemm", 2, 3, 1, 1, C::matmul, kMatrix, sf::gemm,
                  {f("alpha", 1.0f), f("beta", 1.0f), i("transA", 0), i("transB", 0)}, {2}, "dot products"));
  {
    auto a = window_attrs();
    a.push_back(i("group", 1));
    t.push_back(row("Conv", 2, 3, 1, 1, C::conv, kConv, sf::conv, a, {2}, "dot products"));
    a.push_back(ints("output_padding"));
    a.push_back(ints("output_shape"));
    t.push_back(row("ConvTranspose", 2, 3, 1, 1, C::conv, kConv, sf::conv_transpose, a, {2}, "dot products"));
  }

  // Normalisation: statistics and sums stay FP32 whatever the data format.
  t.push_back(row("BatchNormalization", 5, 5, 1, 3, C::normalization, kVector, sf::batch_norm,
                  {f("epsilon", 1e-5f), f("momentum", 0.9f), i("training_mode", 0)}, {1, 2, 3, 4},
                  "scale and shift computed in FP32"));
  t.push_back(row("LayerNormalization", 2, 3, 1, 3, C::normalization, kVector, sf::layer_norm,
                  {i("axis", -1), f("epsilon", 1e-5f), i("stash_type", 1)}, {1, 2},
                  "mean and variance accumulate in FP32"));
  t.push_back(row("Softmax", 1, 1, 1, 1, C::softmax, kVector, sf::softmax, {i("axis", -1)}, {},
                  "max and sum of exponentials in FP32"));
  t.push_back(row("LogSoftmax", 1, 1, 1, 1, C::softmax, kVector, sf::softmax, {i("axis", -1)}, {},
                  "max and sum of exponentials in FP32"));

  t.push_back(row("Hardmax", 1, 1, 1, 1, C::softmax, kVector, sf::softmax, {i("axis", -1)}));
  t.push_back(row("NegativeLogLikelihoodLoss", 2, 3, 1, 1, C::elementwise, kVector, sf::nll_loss,
                  {s("reduction", "mean"), opt_int("ignore_index")}, {1, 2}, "sums in FP32"));
  t.push_back(row("SoftmaxCrossEntropyLoss", 2, 3, 1, 2, C::softmax, kVector, sf::softmax_cross_entropy,
                  {s("reduction", "mean"), opt_int("ignore_index")}, {1, 2},
                  "max, sum of exponentials and loss sums in FP32"));

  // Reductions (axes: attribute before opset 13/18, input after).
  for (const char* n : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    t.push_back(row(n, 1, 2, 1, 1, C::elementwise, kVector, sf::reduce,
                    {ints("axes"), i("keepdims", 1), i("noop_with_empty_axes", 0)}, {1}, "sums in FP32"));

  for (const char* n : {"ArgMax", "ArgMin"})
    t.push_back(row(n, 1, 1, 1, 1, C::elementwise, kVector, sf::arg_reduce,
                    {i("axis", 0), i("keepdims", 1), i("select_last_index", 0)}));
  t.push_back(row("CumSum", 2, 2, 1, 1, C::elementwise, kVector, sf::same_as_input0,
                  {i("exclusive", 0), i("reverse", 0)}, {1}, "sums in FP32"));

  // Pooling.
  {
    auto a = window_attrs();
    a.push_back(i("ceil_mode", 0));
    a.push_back(i("storage_order", 0));
    t.push_back(row("MaxPool", 1, 1, 1, 2, C::data_movement, kVector, sf::pool, a));
    auto b = window_attrs();
    b.push_back(i("ceil_mode", 0));
    b.push_back(i("count_include_pad", 0));
    t.push_back(row("AveragePool", 1, 1, 1, 1, C::elementwise, kVector, sf::pool, b, {}, "window sums in FP32"));
  }
  t.push_back(row("GlobalAveragePool", 1, 1, 1, 1, C::elementwise, kVector, sf::global_pool, {}, {}, "sums in FP32"));
  t.push_back(row("Resize", 1, 4, 1, 1, C::data_movement, kVector, sf::resize,
                  {s("mode", "nearest"), s("coordinate_transformation_mode", "half_pixel"),
                   s("nearest_mode", "round_prefer_floor"), f("cubic_coeff_a", -0.75f),
                   i("exclude_outside", 0), f("extrapolation_value", 0.0f)},
                  {1, 2, 3}));

  // Data movement and shapes.
  t.push_back(row("Gather", 2, 2, 1, 1, C::embedding, kAny, sf::gather, {i("axis", 0)}, {1}));
  t.push_back(row("GatherElements", 2, 2, 1, 1, C::data_movement, kAny, sf::gather_elements, {i("axis", 0)}, {1}));
  t.push_back(row("Trilu", 1, 2, 1, 1, C::data_movement, kAny, sf::trilu, {i("upper", 1)}, {1}));
  t.push_back(row("Tile", 2, 2, 1, 1, C::data_movement, kAny, sf::tile, {}, {1}));
  t.push_back(row("Reshape", 2, 2, 1, 1, C::data_movement, kAny, sf::reshape, {i("allowzero", 0)}, {1}));
  t.push_back(row("Transpose", 1, 1, 1, 1, C::data_movement, kAny, sf::transpose, {ints("perm")}));
  t.push_back(row("Flatten", 1, 1, 1, 1, C::data_movement, kAny, sf::flatten, {i("axis", 1)}));
  t.push_back(row("Squeeze", 1, 2, 1, 1, C::data_movement, kAny, sf::squeeze, {ints("axes")}, {1}));
  t.push_back(row("Unsqueeze", 1, 2, 1, 1, C::data_movement, kAny, sf::unsqueeze, {ints("axes")}, {1}));
  t.push_back(row("Concat", 1, kMany, 1, 1, C::data_movement, kAny, sf::concat, {req_int("axis")}));
  t.push_back(row("Split", 1, 2, 1, kMany, C::data_movement, kAny, sf::split,
                  {i("axis", 0), ints("split"), opt_int("num_outputs")}, {1}));
  t.push_back(row("Slice", 1, 5, 1, 1, C::data_movement, kAny, sf::slice,
                  {ints("starts"), ints("ends"), ints("axes")}, {1, 2, 3, 4}));
  t.push_back(row("Pad", 1, 4, 1, 1, C::data_movement, kAny, sf::pad,
                  {s("mode", "constant"), ints("pads"), f("value", 0.0f)}, {1, 2, 3}));
  t.push_back(row("Expand", 2, 2, 1, 1, C::data_movement, kAny, sf::expand, {}, {1}));
  t.push_back(row("DepthToSpace", 1, 1, 1, 1, C::data_movement, kAny, sf::depth_to_space,
                  {req_int("blocksize"), s("mode", "DCR")}));
  t.push_back(row("SpaceToDepth", 1, 1, 1, 1, C::data_movement, kAny, sf::space_to_depth, {req_int("blocksize")}));
  t.push_back(row("OneHot", 3, 3, 1, 1, C::data_movement, kAny, sf::one_hot, {i("axis", -1)}, {0, 1}));
  t.push_back(row("Size", 1, 1, 1, 1, C::data_movement, kAny, sf::size_of));
  t.push_back(row("Shape", 1, 1, 1, 1, C::data_movement, kAny, sf::shape_of, {i("start", 0), opt_int("end")}));
  t.push_back(row("ConstantOfShape", 1, 1, 1, 1, C::data_movement, kAny, sf::constant_of_shape,
                  {opt_tensor("value")}, {0}));
  t.push_back(row("Range", 3, 3, 1, 1, C::data_movement, kAny, sf::range, {}, {0, 1, 2}));
  t.push_back(row("Constant", 0, 0, 1, 1, C::data_movement, kAny, sf::constant, {opt_tensor("value")}));

  // Control flow. Subgraphs are self-contained: the last `num_captures` inputs are values of the
  // enclosing graph the subgraph uses, passed to it as its last inputs (ONNX import puts them
  // there). The subgraph runs on the reference interpreter, in FP32.
  {
    const AttrDef captures = i("num_captures", 0);
    t.push_back(row("If", 1, kMany, 1, kMany, C::data_movement, kF32, sf::if_,
                    {graph("then_branch"), graph("else_branch"), captures}, {0}));
    // M and cond are both optional (absent: kNoValue), hence no minimum.
    t.push_back(row("Loop", 0, kMany, 1, kMany, C::data_movement, kF32, sf::loop, {graph("body"), captures}, {0, 1}));
    // Opset 9+ form; the opset-8 form (batch dimension) is imported with scan_batched = 1.
    t.push_back(row("Scan", 1, kMany, 1, kMany, C::data_movement, kF32, sf::scan,
                    {graph("body"), req_int("num_scan_inputs"), ints("scan_input_axes"), ints("scan_input_directions"),
                     ints("scan_output_axes"), ints("scan_output_directions"), i("scan_batched", 0), captures}));
  }

  // Quantisation.
  t.push_back(row("QuantizeLinear", 2, 3, 1, 1, C::quantization, {D::I8, D::U8, D::I4}, sf::quantize_linear,
                  {i("axis", 1), i("saturate", 1), i("block_size", 0)}, {1}));
  t.push_back(row("DequantizeLinear", 2, 3, 1, 1, C::quantization, {D::I8, D::U8, D::I4}, sf::dequantize_linear,
                  {i("axis", 1), i("block_size", 0)}, {1}));

  // ---- Recurrent, integer/quantised linear algebra, sampling, signal and local normalisation ----
  {
    // RNN/GRU/LSTM: X, W, R, B, sequence_lens, initial_h (LSTM: initial_c, P); outputs optional.
    std::vector<AttrDef> a = {floats("activation_alpha"), floats("activation_beta"), strings("activations"),
                              opt_float("clip"), s("direction", "forward"), opt_int("hidden_size"), i("layout", 0)};
    t.push_back(row("RNN", 3, 6, 0, 2, C::matmul, kVector, sf::recurrent, a, {4}, "gates and states in FP32"));
    auto g = a;
    g.push_back(i("linear_before_reset", 0));
    t.push_back(row("GRU", 3, 6, 0, 2, C::matmul, kVector, sf::recurrent, g, {4}, "gates and states in FP32"));
    auto l = a;
    l.push_back(i("input_forget", 0));
    t.push_back(row("LSTM", 3, 8, 0, 3, C::matmul, kVector, sf::recurrent, l, {4}, "gates and states in FP32"));
  }
  t.push_back(row("MatMulInteger", 2, 4, 1, 1, C::matmul, {D::I8, D::U8}, sf::matmul_integer, {}, {}, "int32 sums"));
  t.push_back(row("QLinearMatMul", 8, 8, 1, 1, C::matmul, {D::I8, D::U8}, sf::qlinear_matmul, {}, {1, 4, 6},
                  "int32 sums, FP32 requantisation"));
  {
    auto a = window_attrs();
    a.push_back(i("group", 1));
    t.push_back(row("ConvInteger", 2, 4, 1, 1, C::conv, {D::I8, D::U8}, sf::conv_integer, a, {}, "int32 sums"));
    t.push_back(row("QLinearConv", 8, 9, 1, 1, C::conv, {D::I8, D::U8}, sf::qlinear_conv, a, {1, 4, 6, 8},
                    "int32 sums, FP32 requantisation"));
  }
  t.push_back(row("DynamicQuantizeLinear", 1, 1, 3, 3, C::quantization, {D::U8}, sf::dynamic_quantize_linear, {}, {},
                  "min, max and scale in FP32"));
  t.push_back(row("GridSample", 2, 2, 1, 1, C::data_movement, kVector, sf::grid_sample,
                  {i("align_corners", 0), s("mode", "bilinear"), s("padding_mode", "zeros")}, {1}));
  t.push_back(row("InstanceNormalization", 3, 3, 1, 1, C::normalization, kVector, sf::instance_norm,
                  {f("epsilon", 1e-5f)}, {1, 2}, "mean and variance accumulate in FP32"));
  t.push_back(row("LRN", 1, 1, 1, 1, C::normalization, kVector, sf::same_as_input0,
                  {f("alpha", 1e-4f), f("beta", 0.75f), f("bias", 1.0f), req_int("size")}, {}, "window sums in FP32"));
  t.push_back(row("MeanVarianceNormalization", 1, 1, 1, 1, C::normalization, kVector, sf::same_as_input0,
                  {ints("axes")}, {}, "mean and variance accumulate in FP32"));
  t.push_back(row("Shrink", 1, 1, 1, 1, C::elementwise, kVector, sf::same_as_input0, {f("bias", 0.0f), f("lambd", 0.5f)}));
  t.push_back(row("Celu", 1, 1, 1, 1, C::elementwise, kVector, sf::same_as_input0, {f("alpha", 1.0f)}));
  t.push_back(row("PRelu", 2, 2, 1, 1, C::elementwise, kVector, sf::prelu));
  for (const char* n : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    t.push_back(row(n, 1, 1, 1, 1, C::elementwise, kF32, sf::window, {i("output_datatype", 1), i("periodic", 1)}, {0}));
  t.push_back(row("DFT", 1, 2, 1, 1, C::matmul, kF32, sf::dft, {i("axis", 1), i("inverse", 0), i("onesided", 0)}, {1},
                  "sums in FP64"));
  t.push_back(row("STFT", 2, 4, 1, 1, C::matmul, kF32, sf::stft, {i("onesided", 1)}, {1, 3}, "sums in FP64"));
  t.push_back(row("MelWeightMatrix", 5, 5, 1, 1, C::elementwise, kF32, sf::mel_weight_matrix,
                  {i("output_datatype", 1)}, {0, 1, 2, 3, 4}));
  // Selection with data-dependent sizes, scatter/gather, detection, text features, Einsum, Det.
  // TopK's k is an input from opset 10, an attribute before.
  t.push_back(row("TopK", 1, 2, 1, 2, C::data_movement, kAny, sf::top_k,
                  {i("axis", -1), i("largest", 1), i("sorted", 1), opt_int("k")}, {1}));
  t.push_back(row("Unique", 1, 1, 1, 4, C::data_movement, kAny, sf::unique,
                  {opt_int("axis"), i("sorted", 1)}));
  t.push_back(
      row("Compress", 2, 2, 1, 1, C::data_movement, kAny, sf::compress, {opt_int("axis")}, {1}));
  t.push_back(row("NonZero", 1, 1, 1, 1, C::data_movement, kAny, sf::non_zero));
  t.push_back(row("ScatterElements", 3, 3, 1, 1, C::data_movement, kAny, sf::scatter_elements,
                  {i("axis", 0), s("reduction", "none")}, {1}));
  t.push_back(row("ScatterND", 3, 3, 1, 1, C::data_movement, kAny, sf::scatter_nd,
                  {s("reduction", "none")}, {1}));
  t.push_back(row("GatherND", 2, 2, 1, 1, C::data_movement, kAny, sf::gather_nd,
                  {i("batch_dims", 0)}, {1}));
  t.push_back(row("EyeLike", 1, 1, 1, 1, C::data_movement, kAny, sf::eye_like,
                  {opt_int("dtype"), i("k", 0)}));
  t.push_back(row("ReverseSequence", 2, 2, 1, 1, C::data_movement, kAny, sf::reverse_sequence,
                  {i("batch_axis", 1), i("time_axis", 0)}, {1}));
  for (const char* n : {"GreaterOrEqual", "LessOrEqual"})
    t.push_back(row(n, 2, 2, 1, 1, C::elementwise, kAny, sf::compare));
  t.push_back(row("BitShift", 2, 2, 1, 1, C::elementwise, {D::U8}, sf::bit_shift,
                  {{"direction", AttrType::string, std::nullopt, true}}));
  t.push_back(row("GlobalMaxPool", 1, 1, 1, 1, C::data_movement, kVector, sf::global_pool));
  t.push_back(
      row("MaxUnpool", 2, 3, 1, 1, C::data_movement, kVector, sf::max_unpool,
          {{"kernel_shape", AttrType::ints, std::nullopt, true}, ints("pads"), ints("strides")},
          {1, 2}));
  t.push_back(row(
      "RoiAlign", 3, 3, 1, 1, C::data_movement, kVector, sf::roi_align,
      {s("coordinate_transformation_mode", "half_pixel"), s("mode", "avg"), i("output_height", 1),
       i("output_width", 1), i("sampling_ratio", 0), f("spatial_scale", 1.0f)},
      {1, 2}, "bilinear weights and bin sums in FP32"));
  t.push_back(row("NonMaxSuppression", 2, 5, 1, 1, C::data_movement, kF32, sf::non_max_suppression,
                  {i("center_point_box", 0)}, {0, 1, 2, 3, 4}));
  t.push_back(row("TfIdfVectorizer", 1, 1, 1, 1, C::data_movement, kF32, sf::tfidf_vectorizer,
                  {req_int("max_gram_length"),
                   req_int("min_gram_length"),
                   req_int("max_skip_count"),
                   {"mode", AttrType::string, std::nullopt, true},
                   ints("ngram_counts"),
                   ints("ngram_indexes"),
                   ints("pool_int64s"),
                   {"pool_strings", AttrType::strings, std::nullopt},
                   {"weights", AttrType::floats, std::nullopt}},
                  {0}));
  t.push_back(row("Einsum", 1, kMany, 1, 1, C::matmul, kVector, sf::einsum,
                  {{"equation", AttrType::string, std::nullopt, true}}, {}, "sums of products"));
  t.push_back(row("Det", 1, 1, 1, 1, C::matmul, kF32, sf::det, {}, {},
                  "LU factorisation in FP32 or wider"));
  std::sort(t.begin(), t.end(), [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
  return t;
}

const std::vector<OpDef>& table() {
  static const std::vector<OpDef> t = build_table();
  return t;
}

}  // namespace

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::matmul: return "matmul";
    case OpClass::conv: return "conv";
    case OpClass::attention: return "attention";
    case OpClass::normalization: return "normalization";
    case OpClass::softmax: return "softmax";
    case OpClass::embedding: return "embedding";
    case OpClass::elementwise: return "elementwise";
    case OpClass::data_movement: return "data_movement";
    case OpClass::quantization: return "quantization";
  }
  return "?";
}

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::int_: return "int";
    case AttrType::float_: return "float";
    case AttrType::string: return "string";
    case AttrType::ints: return "ints";
    case AttrType::floats: return "floats";
    case AttrType::strings: return "strings";
    case AttrType::tensor: return "tensor";
    case AttrType::graph: return "graph";
  }
  return "?";
}

const AttrDef* OpDef::attr(std::string_view attr_name) const {
  for (const AttrDef& a : attrs)
    if (a.name == attr_name) return &a;
  return nullptr;
}

const OpDef* find_op(std::string_view name) {
  const auto& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), name,
                             [](const OpDef& d, std::string_view n) { return d.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

std::span<const OpDef> all_ops() { return table(); }

Expected<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return D::F32;
    case 2: return D::U8;
    case 3: return D::I8;
    case 6: return D::I32;
    case 7: return D::I64;
    case 9: return D::BOOL;
    case 10: return D::F16;
    case 16: return D::BF16;
    case 17: return D::F8E4M3;
    case 19: return D::F8E5M2;
    case 22: return D::I4;
  }
  return Status::unsupported("ONNX data type " + std::to_string(code) + " is not supported");
}

int64_t dtype_to_onnx(DType t) {
  switch (t) {
    case D::F32:
    case D::TF32: return 1;
    case D::U8: return 2;
    case D::I8: return 3;
    case D::I16: return 5;
    case D::I32: return 6;
    case D::I64: return 7;
    case D::BOOL: return 9;
    case D::F16: return 10;
    case D::BF16: return 16;
    case D::F8E4M3: return 17;
    case D::F8E5M2: return 19;
    case D::I4: return 22;
  }
  return 0;
}

bool attr_matches(const AttrValue& v, AttrType t) {
  switch (t) {
    case AttrType::int_: return std::holds_alternative<int64_t>(v);
    // An integer literal where a float is expected is accepted (ONNX exporters do this).
    case AttrType::float_:
      return std::holds_alternative<float>(v) || std::holds_alternative<int64_t>(v);
    case AttrType::string: return std::holds_alternative<std::string>(v);
    case AttrType::ints: return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::floats: return std::holds_alternative<std::vector<float>>(v);
    case AttrType::strings: return std::holds_alternative<std::vector<std::string>>(v);
    case AttrType::tensor: return std::holds_alternative<Tensor>(v);
    case AttrType::graph: {
      const GraphAttr* g = std::get_if<GraphAttr>(&v);
      return g && *g;
    }
  }
  return false;
}

}  // namespace hpf::ir
