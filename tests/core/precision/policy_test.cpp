// Policy: parsing, its error messages, and writing it back.
#include <doctest/doctest.h>

#include <string>

#include "hpf/precision.hpp"

using namespace hpf;

TEST_CASE("policy: modes and classes by name") {
  for (const char* m : {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4-weights", "auto"})
    CHECK(std::string(mode_name(parse_mode(m).value())) == m);
  CHECK(parse_mode("int4_weights").value() == Mode::int4_weights);
  auto bad = parse_mode("fp12");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "unknown precision mode 'fp12' (modes: fp32, tf32, bf16, fp16, fp8, int8, int4-weights, "
        "auto)");
  for (const char* c : {"attention", "ffn", "embedding", "conv", "norm", "softmax", "elementwise",
                        "output", "other"})
    CHECK(std::string(node_class_name(parse_node_class(c).value())) == c);
  auto bad_class = parse_node_class("mlp");
  REQUIRE_FALSE(bad_class.ok());
  CHECK(bad_class.status().message().find("unknown node class 'mlp' (classes: attention, ffn,") ==
        0);
}

TEST_CASE("policy: classes, default, node globs in order, op-type lists") {
  auto p = Policy::from_json(
      R"({"attention": "fp16", "ffn": "bf16", "embedding": "fp32", "default": "tf32",
      "nodes": {"layer0/*": "fp16", "layer0/attention/softmax": "fp32", "*/ffn/[ud]*": "int8"},
      "lower": ["MatMul", "Gemm"], "lower_to": "fp8", "follow": ["Reshape"], "never": ["Softmax", "LayerNormalization"]})");
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  CHECK(p->default_mode == Mode::tf32);
  CHECK(p->by_class.size() == 3);
  CHECK(p->by_class.at(NodeClass::attention) == Mode::fp16);
  CHECK(p->by_class.at(NodeClass::ffn) == Mode::bf16);
  CHECK(p->by_class.at(NodeClass::embedding) == Mode::fp32);
  REQUIRE(p->by_node.size() == 3);
  // Written order is kept (a JSON object, but the rules are ordered: the last match wins).
  CHECK(p->by_node[0] == std::pair<std::string, Mode>{"layer0/*", Mode::fp16});
  CHECK(p->by_node[1] == std::pair<std::string, Mode>{"layer0/attention/softmax", Mode::fp32});
  CHECK(p->by_node[2] == std::pair<std::string, Mode>{"*/ffn/[ud]*", Mode::int8});
  CHECK(p->always_lower == std::vector<std::string>{"MatMul", "Gemm"});
  CHECK(p->lower_to == Mode::fp8);
  CHECK(p->follow_inputs == std::vector<std::string>{"Reshape"});
  CHECK(p->never_lower == std::vector<std::string>{"Softmax", "LayerNormalization"});

  // Written back and read again: the same policy.
  auto again = Policy::from_json(p->to_json());
  REQUIRE_MESSAGE(again.ok(), again.status().to_string());
  CHECK(again->to_json() == p->to_json());
  CHECK(again->by_node == p->by_node);
  CHECK(again->by_class == p->by_class);
  CHECK(again->lower_to == p->lower_to);

  auto u = Policy::uniform(Mode::bf16);
  CHECK(u.default_mode == Mode::bf16);
  CHECK(u.by_class.empty());
  CHECK(u.to_json() == R"({"default":"bf16"})");
  CHECK(Policy::from_json("{}").value().default_mode == Mode::fp32);
}

TEST_CASE("policy: errors name the key or value") {
  auto msg = [](const char* json) {
    auto p = Policy::from_json(json);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::invalid_argument);
    return p.status().message();
  };
  CHECK(msg(R"({"attn": "fp16"})").find("policy: unknown key 'attn' (expected a node class") == 0);
  CHECK(msg(R"({"attention": "fp12"})") ==
        "policy: \"attention\": unknown precision mode 'fp12' (modes: fp32, tf32, bf16, fp16, fp8, "
        "int8, "
        "int4-weights, auto)");
  CHECK(msg(R"({"default": 16})") == "policy: \"default\": expected a mode name, got 16");
  CHECK(msg(R"({"nodes": {"a/*": "half"}})")
            .find("policy: \"nodes\": \"a/*\": unknown precision mode 'half'") == 0);
  CHECK(msg(R"({"nodes": ["a/*"]})") ==
        "policy: \"nodes\": expected an object of \"glob\": \"mode\", got [\"a/*\"]");
  CHECK(msg(R"({"never": ["Softmaxx"]})") == "policy: \"never\": unknown op type 'Softmaxx'");
  CHECK(msg(R"({"lower": "MatMul"})") ==
        "policy: \"lower\": expected a list of op types, got \"MatMul\"");
  CHECK(msg(R"({"lower": ["MatMul"], "never": ["Softmax", "MatMul"]})") ==
        "policy: op type 'MatMul' is in both \"lower\" and \"never\"");
  CHECK(msg(R"({"attention": "fp16",)").find("policy: not valid JSON") == 0);
  CHECK(msg(R"(["fp16"])") == "policy: expected a JSON object, got [\"fp16\"]");
}
