// Reference interpreter: Einsum (transposes, diagonals, traces, batches with broadcast
// ellipses, sums, implicit outputs) against loops written out here, and TfIdfVectorizer.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/core/ref/ref_test_util.hpp"

namespace hpf::test {
namespace {

std::vector<float> ramp(int64_t n, float scale = 1, float offset = 0) {
  std::vector<float> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = offset + scale * float(k % 7) - 0.5f * float(k % 3);
  return v;
}

Tensor einsum(const std::string& eq, std::vector<Arg> args) {
  return run1("Einsum", std::move(args), {{"equation", eq}});
}

}  // namespace

TEST_CASE("ref einsum: matrix products, explicit and implicit") {
  const auto a = ramp(6), b = ramp(12, 0.5f, 1);
  std::vector<float> want(8, 0);  // [2,3] x [3,4]
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) want[i * 4 + k] += a[i * 3 + j] * b[j * 4 + k];
  check_close(einsum("ij,jk->ik", {in(f32({2, 3}, a)), in(f32({3, 4}, b))}), {2, 4}, want);
  check_close(einsum("ij,jk", {in(f32({2, 3}, a)), in(f32({3, 4}, b))}), {2, 4}, want);
  // The transposed product [4,2] = (AB)^T, with spaces in the equation.
  std::vector<float> want_t(8);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) want_t[k * 2 + i] = want[i * 4 + k];
  check_close(einsum(" ij , jk -> ki ", {in(f32({2, 3}, a)), in(f32({3, 4}, b))}), {4, 2}, want_t);
}

TEST_CASE("ref einsum: transpose, diagonal, trace, sums, outer product") {
  const Tensor m = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_close(einsum("ij->ji", {in(m)}), {3, 3}, {1, 4, 7, 2, 5, 8, 3, 6, 9});
  check_close(einsum("ii->i", {in(m)}), {3}, {1, 5, 9});
  check_close(einsum("ii", {in(m)}), {}, {15});
  check_close(einsum("ij->j", {in(m)}), {3}, {12, 15, 18});
  check_close(einsum("ij->", {in(m)}), {}, {45});
  check_close(einsum("i,j->ij", {in(f32({2}, {1, 2})), in(f32({3}, {3, 4, 5}))}), {2, 3},
              {3, 4, 5, 6, 8, 10});
  check_close(einsum("i,i", {in(f32({3}, {1, 2, 3})), in(f32({3}, {4, 5, 6}))}), {}, {32});
}

TEST_CASE("ref einsum: ellipsis batches broadcast, and batched diagonals") {
  // [2,1,2,3] x [4,3,2] -> [2,4,2,2]: batch dims [2,1] and [4] broadcast to [2,4].
  const auto a = ramp(12), b = ramp(24, 0.25f, -1);
  std::vector<float> want(2 * 4 * 2 * 2, 0);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k)
          for (int j = 0; j < 3; ++j)
            want[((p * 4 + q) * 2 + i) * 2 + k] += a[(p * 2 + i) * 3 + j] * b[(q * 3 + j) * 2 + k];
  check_close(einsum("...ij,...jk->...ik", {in(f32({2, 1, 2, 3}, a)), in(f32({4, 3, 2}, b))}),
              {2, 4, 2, 2}, want);
  // Implicit output: the ellipsis first, then the letters used once.
  check_close(einsum("...ii", {in(f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))}), {2}, {5, 13});
  check_close(einsum("...ii->...i", {in(f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}))}), {2, 2},
              {1, 4, 5, 8});
}

TEST_CASE("ref einsum: integers, and errors naming the equation") {
  check_ints(run1("Einsum", {in(i64({2, 2}, {1, 2, 3, 4})), in(i64({2}, {10, 100}))},
                  {{"equation", std::string("ij,j->i")}}),
             {2}, {210, 430});
  check_error(run_op("Einsum", {in(f32({2, 3}, ramp(6)))}, {{"equation", std::string("ijk->i")}}),
              {"operand 0 has rank 2, its term 'ijk' names 3 dimensions"});
  check_error(run_op("Einsum", {in(f32({2, 3}, ramp(6)))}, {{"equation", std::string("ij->ix")}}),
              {"output label 'x' is in no operand"});
  check_error(run_op("Einsum", {in(f32({2, 3}, ramp(6))), in(f32({2, 3}, ramp(6)))},
                     {{"equation", std::string("ij,jk")}}),
              {"has size 2, another use of the same label has 3"});
}

TEST_CASE("ref text: TfIdfVectorizer counts n-grams with skips, in TF, IDF and TFIDF modes") {
  // Pool: unigrams {2, 3}, bigrams {(2,3), (3,4)}; columns 0..3 in that order.
  Attributes a = {{"min_gram_length", int64_t{1}},
                  {"max_gram_length", int64_t{2}},
                  {"max_skip_count", int64_t{0}},
                  {"mode", std::string("TF")},
                  {"ngram_counts", std::vector<int64_t>{0, 2}},
                  {"ngram_indexes", std::vector<int64_t>{0, 1, 2, 3}},
                  {"pool_int64s", std::vector<int64_t>{2, 3, 2, 3, 3, 4}}};
  const Tensor x = i64({6}, {2, 3, 4, 2, 9, 3});
  check_close(run1("TfIdfVectorizer", {in(x)}, a), {4}, {2, 2, 1, 1});
  // Skip 1 adds the bigrams (2,4), (3,2), (4,9), (2,3): one more (2,3); unigrams count once.
  a["max_skip_count"] = int64_t{1};
  check_close(run1("TfIdfVectorizer", {in(x)}, a), {4}, {2, 2, 2, 1});
  a["min_gram_length"] = int64_t{2};
  check_close(run1("TfIdfVectorizer", {in(x)}, a), {4}, {0, 0, 2, 1});
  a["weights"] = std::vector<float>{1, 1, 0.5f, 3};
  a["mode"] = std::string("TFIDF");
  check_close(run1("TfIdfVectorizer", {in(x)}, a), {4}, {0, 0, 1, 3});
  a["mode"] = std::string("IDF");
  check_close(run1("TfIdfVectorizer", {in(x)}, a), {4}, {0, 0, 0.5f, 3});
  // Rows of a [N, C] input are counted separately.
  a["mode"] = std::string("TF");
  check_close(run1("TfIdfVectorizer", {in(i64({2, 3}, {2, 3, 4, 3, 4, 3}))}, a), {2, 4},
              {0, 0, 1, 1, 0, 0, 0, 1});
  check_error(run_op("TfIdfVectorizer", {in(f32({2}, {1, 2}))}, a), {"X must be integers"});
}

}  // namespace hpf::test
