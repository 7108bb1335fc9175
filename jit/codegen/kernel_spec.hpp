// KernelSpec: what one generated kernel computes (op family, dtypes, concrete shapes,
// attributes) — the "what"; codegen turns it into source in a device dialect — the "how".
// Plain data, hashable through its canonical text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpf/graph.hpp"

namespace hpf::jit {

struct TensorDesc {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

// One step of a fused elementwise chain. Operands: indices into the kernel's inputs (>= 0),
// earlier steps (-1 - step index), or kAbsentOperand for an omitted optional input.
inline constexpr int kAbsentOperand = -(1 << 30);
// In an epilogue: the operand that is the producer's own result (FP32, before any rounding).
inline constexpr int kProducerResult = -(1 << 29);
struct ElementwiseStep {
  std::string op;              // ONNX op name: Add, Relu, Gelu, Cast, ...
  std::vector<int> operands;
  Attributes attrs;
  DType dtype = DType::F32;    // format of the step's result (rounded to it, as the graph says)
};

struct KernelSpec {
  std::string family;          // elementwise | matmul | attention | softmax | layernorm | gather | transpose ...
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  DType accumulation = DType::F32;
  Attributes attrs;
  std::vector<ElementwiseStep> chain;  // elementwise family
  // matmul | conv: elementwise steps applied to each result in the kernel before it is stored
  // (operands as in `chain`, kProducerResult naming the producer's value). The steps read only
  // the last `epilogue_inputs` inputs, each a scalar, one value per output channel (conv: axis
  // 1; matmul: the last axis) or of the output's full shape. The output desc is the last step's.
  std::vector<ElementwiseStep> epilogue;
  int epilogue_inputs = 0;

  // Canonical text of everything above: equal specs give equal text.
  std::string canonical() const;
};

struct GeneratedKernel {
  std::string name;            // the entry point's symbol
  std::string source;          // a complete translation unit in the dialect
  int64_t work_items = 0;      // the launch's range: kernels process [begin, end) of it
  int64_t grain = 0;           // smallest range worth a thread
};

// C dialect (CPU plugin). Errors: unsupported family/op/dtype, naming what.
Expected<GeneratedKernel> generate_c(const KernelSpec& spec);

// The tile configurations generate_c can give `spec`'s kernel (values of the "tile" attribute),
// for autotuning; the first is the default, the kernel generate_c makes without the attribute.
// Empty: nothing to choose (most kernels, and a spec that already has a "tile").
std::vector<std::string> c_tile_variants(const KernelSpec& spec);

// The input of `spec` whose memory its C kernel may write the output over, or -1: an input the
// kernel reads only element by element, each element to compute the output element at the same
// index and before storing that one, in the output's format and shape: a Conv's epilogue operand
// of one value per output (a residual Add). Every C Conv kernel reads such an operand only in
// its finish (conv::finish_store, conv::tile_finish_vectors), which stores no output element
// before reading its operand, and writes no other output element in between.
int c_in_place_input(const KernelSpec& spec);

}  // namespace hpf::jit
