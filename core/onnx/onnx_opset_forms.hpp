// Older ONNX forms of the op table's ops, rewritten at import into the forms the table holds.
// The op table keeps the attributes older opsets used where they later became inputs (Slice,
// Pad, Split, Squeeze, Unsqueeze, Reduce*, TopK, Clip, Dropout), so those need nothing here;
// this file handles forms whose inputs, attributes or meaning differ, one function per form.
// Internal to the ONNX importer (no protobuf here: the importer hands over a NodeDraft).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hpf/graph.hpp"
#include "hpf/status.hpp"

namespace hpf::onnx_forms {

// The default-domain opsets the importer reads. Opsets below 7 are read op by op: a node is
// accepted where its form at the model's opset equals (or is translated to) a later one.
constexpr int64_t kMaxOpset = 21;
constexpr int64_t kFullOpset = 7;

// A node as read from the file, before it enters the graph.
struct NodeDraft {
  std::string op_type;  // as written in the file
  std::string op;       // the op-table name
  std::string name;
  std::string where;    // "node 'n' (Op)", the prefix of messages
  std::vector<ValueId> inputs;
  std::vector<std::string> outputs;
  Attributes attrs;
};

struct FormContext {
  Graph& graph;
  int64_t opset;
  std::function<std::string(const std::string&)> unique_name;  // a fresh node name from a wanted one
};

// The model-level check of the default-domain opset.
Status check_opset(int64_t opset);

// Whether `attr` of `op_type` at `opset` has an older form that a translation below consumes:
// an attribute the op table lacks (e.g. BatchNormalization's spatial before opset 9) or one whose
// type changed (Cast's `to`, a type name before opset 6).
bool is_older_form_attribute(const std::string& op_type, int64_t opset, const std::string& attr);

// Rewrites `d` into the op table's form, adding helper nodes and initializers to the graph where
// needed. Sets `added` when it put the node's whole computation into the graph itself.
// Unsupported older forms give an unsupported Status naming node, op, opset and attribute.
Status translate(FormContext& c, NodeDraft& d, bool& added);

}  // namespace hpf::onnx_forms
