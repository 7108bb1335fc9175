#include "jit/codegen/lstm_form.hpp"

#include "jit/codegen/c_helpers.hpp"

namespace hpf::jit {

int LstmForm::input(int k) const {
  if (!has_in(k)) return -1;
  int p = 0;
  for (int j = 0; j < k; ++j) p += has_in(j);
  return p;
}

int LstmForm::output(int k) const {
  if (!has_out(k)) return -1;
  int p = 0;
  for (int j = 0; j < k; ++j) p += has_out(j);
  return p;
}

Expected<LstmForm> lstm_form(const KernelSpec& spec, const std::string& who) {
  LstmForm f;
  f.in_mask = attr_i(spec.attrs, "lstm_inputs", 0);
  f.out_mask = attr_i(spec.attrs, "lstm_outputs", 1);
  int expected_inputs = 0, expected_outputs = 0;
  for (int k = 0; k < 8; ++k) expected_inputs += f.has_in(k);
  for (int k = 0; k < 3; ++k) expected_outputs += f.has_out(k);
  if (static_cast<int>(spec.inputs.size()) != expected_inputs || static_cast<int>(spec.outputs.size()) != expected_outputs ||
      expected_outputs == 0)
    return Status::invalid("lstm: inputs/outputs do not match lstm_inputs/lstm_outputs");
  if (!attr_s(spec.attrs, "direction").empty()) f.direction = attr_s(spec.attrs, "direction");
  if (attr_i(spec.attrs, "layout", 0) != 0) return Status::unsupported(who + ": LSTM with layout 1");
  if (spec.attrs.count("clip")) return Status::unsupported(who + ": LSTM with clip");
  if (attr_i(spec.attrs, "input_forget", 0) != 0) return Status::unsupported(who + ": LSTM with input_forget");
  if (auto it = spec.attrs.find("activations"); it != spec.attrs.end()) {
    const auto* acts = std::get_if<std::vector<std::string>>(&it->second);
    if (!acts) return Status::unsupported(who + ": LSTM activations attribute of an unexpected type");
    for (size_t k = 0; k < acts->size(); ++k)
      if ((*acts)[k] != (k % 3 == 0 ? "Sigmoid" : "Tanh"))
        return Status::unsupported(who + ": LSTM activation '" + (*acts)[k] + "' (only the default Sigmoid, Tanh, Tanh)");
  }
  if (f.direction != "forward" && f.direction != "reverse" && f.direction != "bidirectional")
    return Status::invalid("lstm: direction '" + f.direction + "'");
  const TensorDesc &X = spec.inputs[0], &W = spec.inputs[1], &R = spec.inputs[2];
  if (X.shape.size() != 3 || W.shape.size() != 3 || R.shape.size() != 3)
    return Status::invalid("lstm: X, W and R must have rank 3");
  f.T = X.shape[0], f.B = X.shape[1], f.I = X.shape[2], f.D = W.shape[0], f.G = W.shape[1], f.H = f.G / 4;
  if (f.D != (f.direction == "bidirectional" ? 2 : 1) || f.G % 4 != 0 || W.shape[2] != f.I || R.shape[0] != f.D ||
      R.shape[1] != f.G || R.shape[2] != f.H)
    return Status::invalid("lstm: W " + shape_string(W.shape) + " and R " + shape_string(R.shape) + " do not fit X " +
                           shape_string(X.shape));
  for (int k : {0, 1, 2, 3, 5, 6, 7})
    if (f.has_in(k) && !is_float(spec.inputs[static_cast<size_t>(f.input(k))].dtype))
      return Status::invalid("lstm: input " + std::to_string(k) + " is not float");
  if (f.has_in(4) && spec.inputs[static_cast<size_t>(f.input(4))].dtype != DType::I32)
    return Status::unsupported(who + ": LSTM sequence_lens of " +
                               std::string(dtype_name(spec.inputs[static_cast<size_t>(f.input(4))].dtype)));
  for (const TensorDesc& y : spec.outputs)
    if (!is_float(y.dtype)) return Status::invalid("lstm: output is not float");
  return f;
}

}  // namespace hpf::jit
