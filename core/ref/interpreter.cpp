// The reference interpreter's run loop: input checks, op-by-op execution in topological order,
// rounding of every value to its format, freeing values after their last use.
#include <exception>

#include "core/ref/kernel.hpp"
#include "hpf/log.hpp"
#include "hpf/reference.hpp"

namespace hpf::ref {
namespace {

void round_floats(Buf& b, DType fmt, Overflow mode) {
  if (!b.is_float() || fmt == DType::F32) return;
  for (float& x : b.f) x = round_to(fmt, x, mode);
}

// Every value_quant entry must name a float value of the graph: a misspelt name would silently
// leave a value in FP32 and make a quantised plan look better than it is.
Status check_value_quant(const Graph& g, const Emulation& emu) {
  for (const auto& [name, p] : emu.value_quant) {
    auto id = g.find_value(name);
    if (!id)
      return Status::invalid("emulation: value_quant names '" + name + "', which graph '" + g.name() +
                             "' does not have");
    if (!is_float(g.value(*id).dtype))
      return Status::invalid("emulation: value_quant names '" + name + "', a " +
                             std::string(dtype_name(g.value(*id).dtype)) + " value (only float values are quantised)");
  }
  auto check_node = [&](const char* field, const std::string& name) -> Status {
    const std::optional<int32_t> id = g.find_node(name);
    if (!id)
      return Status::invalid("emulation: " + std::string(field) + " names node '" + name + "', which graph '" +
                             g.name() + "' does not have");
    const Node& n = g.node(*id);
    if (n.inputs.empty() || n.inputs[0] == kNoValue || !is_float(g.value(n.inputs[0]).dtype))
      return Status::invalid("emulation: " + std::string(field) + " names node '" + name +
                             "', whose first input is not float");
    return {};
  };
  for (const std::string& name : emu.dynamic_int8_rows) HPF_RETURN_IF_ERROR(check_node("dynamic_int8_rows", name));
  for (const std::string& name : emu.dynamic_u7_rows) {
    HPF_RETURN_IF_ERROR(check_node("dynamic_u7_rows", name));
    if (emu.dynamic_int8_rows.count(name))
      return Status::invalid("emulation: node '" + name + "' is in both dynamic_int8_rows and dynamic_u7_rows");
  }
  for (const std::string& name : emu.dynamic_s16_rows) {
    HPF_RETURN_IF_ERROR(check_node("dynamic_s16_rows", name));
    if (emu.dynamic_int8_rows.count(name) || emu.dynamic_u7_rows.count(name))
      return Status::invalid("emulation: node '" + name + "' is in dynamic_s16_rows and another rows set");
  }
  for (const std::string& name : emu.s16_rows_w16)
    if (!emu.dynamic_s16_rows.count(name))
      return Status::invalid("emulation: s16_rows_w16 names node '" + name + "', which is not in dynamic_s16_rows");
  for (const auto& [name, q] : emu.input_quant) HPF_RETURN_IF_ERROR(check_node("input_quant", name));
  return {};
}

Status check_input(const Graph& g, ValueId id, const Buf& t,
                   std::map<std::string, int64_t>& symbols) {
  const Value& v = g.value(id);
  if (t.dtype != v.dtype)
    return Status::invalid("input '" + v.name + "': expected dtype " + std::string(dtype_name(v.dtype)) +
                           ", got " + std::string(dtype_name(t.dtype)));
  if (!v.has_shape) return {};
  if (t.rank() != static_cast<int64_t>(v.shape.size()))
    return Status::invalid("input '" + v.name + "': expected shape " + to_string(v.shape) + ", got " +
                           shape_string(t.shape));
  for (size_t k = 0; k < v.shape.size(); ++k) {
    const Dim& d = v.shape[k];
    const int64_t got = t.shape[k];
    if (d.known() && d.value != got)
      return Status::invalid("input '" + v.name + "': expected shape " + to_string(v.shape) +
                             ", got " + shape_string(t.shape) + " (dimension " + std::to_string(k) + ")");
    if (!d.known() && !d.symbol.empty()) {
      auto [it, fresh] = symbols.emplace(d.symbol, got);
      if (!fresh && it->second != got)
        return Status::invalid("input '" + v.name + "': dimension '" + d.symbol + "' is " +
                               std::to_string(got) + " here but " + std::to_string(it->second) +
                               " in an earlier input");
    }
  }
  return {};
}

// Kernel results must agree with what shape inference promised; a disagreement is a bug in one
// of the two, reported as such.
Status check_output(const Node& n, const Value& v, const Buf& b) {
  if (b.dtype != v.dtype)
    return Status::internal("node '" + n.name + "' (" + n.op + "): output '" + v.name + "' computed as " +
                            std::string(dtype_name(b.dtype)) + ", graph says " + std::string(dtype_name(v.dtype)));
  const size_t expect = b.is_float() ? b.f.size() : b.i.size();
  if (static_cast<int64_t>(expect) != b.numel())
    return Status::internal("node '" + n.name + "' (" + n.op + "): output '" + v.name + "' holds " +
                            std::to_string(expect) + " values for shape " + shape_string(b.shape));
  if (!v.has_shape) return {};
  bool ok = v.shape.size() == b.shape.size();
  for (size_t k = 0; ok && k < b.shape.size(); ++k)
    ok = !v.shape[k].known() || v.shape[k].value == b.shape[k];
  if (!ok)
    return Status::internal("node '" + n.name + "' (" + n.op + "): output '" + v.name + "' has shape " +
                            shape_string(b.shape) + ", shape inference said " + to_string(v.shape));
  return {};
}

}  // namespace

Expected<std::vector<Tensor>> run(const Graph& g, const std::vector<Tensor>& inputs,
                                  const RunOptions& options) {
  std::vector<Buf> bufs;
  bufs.reserve(inputs.size());
  for (const Tensor& t : inputs) bufs.push_back(to_buf(t));
  HPF_ASSIGN_OR_RETURN(auto outs, run_bufs(g, std::move(bufs), options));
  std::vector<Tensor> out;
  out.reserve(outs.size());
  for (const Buf& b : outs) out.push_back(to_tensor(b));
  return out;
}

Expected<std::vector<Buf>> run_bufs(const Graph& g, std::vector<Buf> inputs, const RunOptions& options) {
  if (inputs.size() != g.inputs().size()) {
    std::string names;
    for (ValueId id : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(id).name;
    return Status::invalid("graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) +
                           " inputs (" + names + "), got " + std::to_string(inputs.size()));
  }
  const Emulation* emu = options.emulation;
  if (emu) HPF_RETURN_IF_ERROR(check_value_quant(g, *emu));
  auto format_of = [&](const Value& v) {
    if (!emu || !is_float(v.dtype)) return DType::F32;
    auto it = emu->value_format.find(v.name);
    return it != emu->value_format.end() ? it->second : emu->default_format;
  };
  const Overflow mode = emu ? emu->overflow : Overflow::saturate;
  // A value's emulated storage: its quantised form when the emulation quantises it, else its
  // float format.
  auto store = [&](Buf& b, const Value& v) -> Status {
    if (emu && b.is_float()) {
      auto q = emu->value_quant.find(v.name);
      if (q != emu->value_quant.end()) {
        Status s = fake_quantize(b.f, b.shape, q->second, mode);
        if (!s.ok()) return Status::invalid("emulation: value '" + v.name + "': " + s.message());
        return {};
      }
    }
    round_floats(b, format_of(v), mode);
    return {};
  };

  HPF_ASSIGN_OR_RETURN(auto order, g.topological_order());
  const auto& values = g.values();
  std::vector<Buf> env(values.size());
  std::vector<bool> ready(values.size(), false);

  // Last use of each value, to free intermediates early (BERT-sized graphs).
  std::vector<int> last_use(values.size(), -1);
  for (size_t step = 0; step < order.size(); ++step)
    for (ValueId v : g.node(order[step]).inputs)
      if (v != kNoValue) last_use[v] = static_cast<int>(step);
  for (ValueId v : g.outputs()) last_use[v] = static_cast<int>(order.size());

  std::map<std::string, int64_t> symbols;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueId id = g.inputs()[k];
    HPF_RETURN_IF_ERROR(check_input(g, id, inputs[k], symbols));
    env[id] = std::move(inputs[k]);
    HPF_RETURN_IF_ERROR(store(env[id], values[id]));
    ready[id] = true;
  }
  auto materialise = [&](ValueId id) -> Status {
    if (ready[id] || !values[id].constant) return {};
    env[id] = to_buf(*values[id].constant);
    HPF_RETURN_IF_ERROR(store(env[id], values[id]));
    ready[id] = true;
    return {};
  };
  for (ValueId id : g.outputs()) HPF_RETURN_IF_ERROR(materialise(id));

  const KernelTable& table = kernels();
  const bool trace = log_level() <= LogLevel::trace;
  for (size_t step = 0; step < order.size(); ++step) {
    const Node& n = g.node(order[step]);
    const ir::OpDef* def = ir::find_op(n.op);
    auto kit = table.find(n.op);
    if (!def || kit == table.end())
      return Status::unsupported("node '" + n.name + "': op '" + n.op +
                                 "' has no reference implementation");
    std::vector<const Buf*> in;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        in.push_back(nullptr);
        continue;
      }
      HPF_RETURN_IF_ERROR(materialise(v));
      if (!ready[v])
        return Status::internal("node '" + n.name + "': input '" + values[v].name + "' was not computed");
      in.push_back(&env[v]);
    }
    Buf rows;  // the first input quantised per row, for this node only
    if (const bool u7 = emu && emu->dynamic_u7_rows.count(n.name), s16 = emu && emu->dynamic_s16_rows.count(n.name);
        (u7 || s16 || (emu && emu->dynamic_int8_rows.count(n.name))) && in[0] && in[0]->is_float()) {
      rows = *in[0];
      const int64_t k = rows.shape.empty() ? 1 : rows.shape.back();
      if (k > 0 && !rows.f.empty()) {
        Status s = u7    ? fake_quantize_rows_u7(rows.f, k)
                   : s16 ? fake_quantize_rows_s16(rows.f, k, emu->s16_rows_w16.count(n.name) ? int16_operand_qmax(k) : 0)
                         : fake_quantize_rows_i8(rows.f, k);
        if (!s.ok()) return Status::invalid("emulation: node '" + n.name + "': " + s.message());
      }
      in[0] = &rows;
    }
    if (const auto iq = emu ? emu->input_quant.find(n.name) : std::map<std::string, QuantParams>::const_iterator{};
        emu && iq != emu->input_quant.end() && in[0] && in[0]->is_float()) {
      rows = *in[0];
      Status s = fake_quantize(rows.f, rows.shape, iq->second);
      if (!s.ok()) return Status::invalid("emulation: node '" + n.name + "': input: " + s.message());
      in[0] = &rows;
    }
    Accumulation acc;
    if (emu) {
      auto it = emu->accumulation.find(n.name);
      acc = it != emu->accumulation.end() ? std::optional(it->second) : emu->default_accumulation;
    }
    KernelContext ctx(n, *def, std::move(in), acc);
    HPF_RETURN_IF_ERROR(invoke(kit->second, ctx, n));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const ValueId o = n.outputs[k];
      Buf& b = ctx.out[k];
      HPF_RETURN_IF_ERROR(check_output(n, values[o], b));
      // A kernel computes in FP32; the value's own format decides. Formats with infinities keep
      // them (IEEE); E4M3 saturates like the hardware's satfinite conversion.
      round_floats(b, b.dtype,
                   is_float(b.dtype) && float_format(b.dtype).has_inf ? Overflow::propagate : Overflow::saturate);
      HPF_RETURN_IF_ERROR(store(b, values[o]));
      if (trace)
        log(LogLevel::trace, "ref: node '" + n.name + "' (" + n.op + ") -> '" + values[o].name + "' " +
                                 std::string(dtype_name(b.dtype)) + shape_string(b.shape));
      env[o] = std::move(b);
      ready[o] = true;
    }
    for (ValueId v : n.inputs)
      if (v != kNoValue && last_use[v] == static_cast<int>(step)) {
        env[v] = Buf();
        ready[v] = false;
      }
  }

  std::vector<Buf> out;
  for (ValueId id : g.outputs()) {
    HPF_RETURN_IF_ERROR(materialise(id));
    if (!ready[id]) return Status::internal("output '" + values[id].name + "' was not computed");
    out.push_back(env[id]);  // a copy: one value may be several outputs
  }
  return out;
}

Expected<std::map<std::string, Tensor>> run_named(const Graph& g,
                                                  const std::map<std::string, Tensor>& inputs,
                                            const RunOptions& options) {
  std::vector<Tensor> ordered;
  for (ValueId id : g.inputs()) {
    auto it = inputs.find(g.value(id).name);
    if (it == inputs.end())
      return Status::invalid("graph '" + g.name() + "': input '" + g.value(id).name + "' is missing");
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    auto id = g.find_value(name);
    if (!id || std::find(g.inputs().begin(), g.inputs().end(), *id) == g.inputs().end())
      return Status::invalid("graph '" + g.name() + "' has no input named '" + name + "'");
  }
  HPF_ASSIGN_OR_RETURN(auto outs, run(g, ordered, options));
  std::map<std::string, Tensor> named;
  for (size_t k = 0; k < outs.size(); ++k) named.emplace(g.value(g.outputs()[k]).name, std::move(outs[k]));
  return named;
}

}  // namespace hpf::ref
