// Names of precision modes and node classes, as policies and plan files spell them.
#include <string>

#include "hpf/precision.hpp"

namespace hpf {
namespace {

constexpr Mode kModes[] = {Mode::fp32, Mode::tf32, Mode::bf16,         Mode::fp16,
                           Mode::fp8,  Mode::int8, Mode::int4_weights, Mode::auto_};
constexpr NodeClass kClasses[] = {NodeClass::attention,   NodeClass::ffn,    NodeClass::embedding,
                                  NodeClass::conv,        NodeClass::norm,   NodeClass::softmax,
                                  NodeClass::elementwise, NodeClass::output, NodeClass::other};

template <typename T, size_t N>
std::string list_names(const T (&all)[N], const char* (*name)(T)) {
  std::string s;
  for (T x : all) s += (s.empty() ? "" : ", ") + std::string(name(x));
  return s;
}

}  // namespace

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::fp32:
      return "fp32";
    case Mode::tf32:
      return "tf32";
    case Mode::bf16:
      return "bf16";
    case Mode::fp16:
      return "fp16";
    case Mode::fp8:
      return "fp8";
    case Mode::int8:
      return "int8";
    case Mode::int4_weights:
      return "int4-weights";
    case Mode::auto_:
      return "auto";
  }
  return "?";
}

Expected<Mode> parse_mode(std::string_view name) {
  for (Mode m : kModes)
    if (name == mode_name(m)) return m;
  if (name == "int4_weights") return Mode::int4_weights;
  return Status::invalid("unknown precision mode '" + std::string(name) +
                         "' (modes: " + list_names(kModes, mode_name) + ")");
}

const char* node_class_name(NodeClass c) {
  switch (c) {
    case NodeClass::attention:
      return "attention";
    case NodeClass::ffn:
      return "ffn";
    case NodeClass::embedding:
      return "embedding";
    case NodeClass::conv:
      return "conv";
    case NodeClass::norm:
      return "norm";
    case NodeClass::softmax:
      return "softmax";
    case NodeClass::elementwise:
      return "elementwise";
    case NodeClass::output:
      return "output";
    case NodeClass::other:
      return "other";
  }
  return "?";
}

Expected<NodeClass> parse_node_class(std::string_view name) {
  for (NodeClass c : kClasses)
    if (name == node_class_name(c)) return c;
  return Status::invalid("unknown node class '" + std::string(name) +
                         "' (classes: " + list_names(kClasses, node_class_name) + ")");
}

}  // namespace hpf
