// AttentionView: both memory layouts address the right elements, the valid block / allowed rows have the right
// extents, causal visibility, validate() catches layout mistakes, and bad arguments are refused with messages.

#include <doctest/doctest.h>

#include <cmath>    // NAN
#include <numeric>  // std::iota
#include <string>   // std::string
#include <vector>   // std::vector

#include <xtensor/xtensor.hpp>  // xt::xtensor

#include "darkbert/analysis/attention_view.hpp"
#include "test_support.hpp"

using namespace darkbert;
using darkbert::test::message_of;

TEST_CASE_TEMPLATE("contiguous [layers, heads, L, L] view addresses every element", T, float, double) {
  // 2 layers, 3 heads, L = 4; value = flat index, so each element names its own position.
  std::vector<T> buffer(2 * 3 * 4 * 4);
  std::iota(buffer.begin(), buffer.end(), T(0));
  const auto v = AttentionView<T>::contiguous(buffer.data(), 2, 3, 4, 3, false);
  CHECK(v.layers() == 2);
  CHECK(v.heads() == 3);
  CHECK(v.padded_length() == 4);
  CHECK(v.length() == 3);
  CHECK_FALSE(v.causal());
  for (Index l = 0; l < 2; ++l)
    for (Index h = 0; h < 3; ++h)
      for (Index i = 0; i < 4; ++i)
        for (Index j = 0; j < 4; ++j) CHECK(v(l, h, i, j) == T(((l * 3 + h) * 4 + i) * 4 + j));
  CHECK(v.map(1, 2) == buffer.data() + (1 * 3 + 2) * 16);

  // The valid block is n x n with rows L apart; rows of a bidirectional model have n allowed keys.
  const auto b = v.block(1, 1);
  CHECK(b.rows() == 3);
  CHECK(b.cols() == 3);
  CHECK(b(2, 1) == T((1 * 3 + 1) * 16 + 2 * 4 + 1));
  CHECK(v.row(0, 0, 2).size() == 3);
  CHECK(v.row(0, 0, 2)[0] == T(8));
  CHECK(v.at(1, 2, 2, 2) == T((1 * 3 + 2) * 16 + 10));
  for (Index i = 0; i < 3; ++i) {
    CHECK(v.allowed_keys(i) == 3);
    for (Index j = 0; j < 3; ++j) CHECK(v.visible(i, j));
  }
}

TEST_CASE_TEMPLATE("causal view: row i sees keys 0..i only", T, float, double) {
  std::vector<T> buffer(1 * 1 * 5 * 5, T(0));
  const auto v = AttentionView<T>::contiguous(buffer.data(), 1, 1, 5, 4, true);
  CHECK(v.causal());
  for (Index i = 0; i < 4; ++i) {
    CHECK(v.allowed_keys(i) == i + 1);
    CHECK(v.row(0, 0, i).size() == i + 1);
    for (Index j = 0; j < 4; ++j) CHECK(v.visible(i, j) == (j <= i));
  }
}

TEST_CASE_TEMPLATE("batch slice of [layers, B, heads, L, L] equals the tensor's example without copying", T, float,
                   double) {
  xt::xtensor<T, 5> att = xt::xtensor<T, 5>::from_shape({2, 3, 2, 4, 4});  // layers, B, heads, L, L
  std::iota(att.begin(), att.end(), T(0));
  for (Index b = 0; b < 3; ++b) {
    const auto v = AttentionView<T>::batch_slice(att, b, 4 - b, false);
    const auto raw = AttentionView<T>::batch_slice(att.data(), 2, 3, 2, 4, b, 4 - b, false);
    CHECK(v.length() == 4 - b);
    for (Index l = 0; l < 2; ++l)
      for (Index h = 0; h < 2; ++h) {
        CHECK(v.map(l, h) == &att(l, b, h, 0, 0));  // a view into the tensor, not a copy
        CHECK(raw.map(l, h) == v.map(l, h));
        for (Index i = 0; i < 4; ++i)
          for (Index j = 0; j < 4; ++j) CHECK(v(l, h, i, j) == att(l, b, h, i, j));
      }
  }
}

TEST_CASE("contiguous view of a [layers, heads, L, L] xtensor") {
  xt::xtensor<double, 4> maps = xt::xtensor<double, 4>::from_shape({2, 2, 3, 3});
  std::iota(maps.begin(), maps.end(), 0.0);
  const auto v = AttentionView<double>::contiguous(maps, 2, true);
  CHECK(v(1, 0, 2, 1) == maps(1, 0, 2, 1));
  CHECK(v.block(1, 1)(1, 0) == maps(1, 1, 1, 0));
}

TEST_CASE("bad shapes and indices are refused with a message") {
  std::vector<double> buffer(2 * 2 * 3 * 3, 0.0);
  CHECK(message_of([&] { AttentionView<double>::contiguous(buffer.data(), 2, 2, 3, 4, false); }) ==
        "attention view: valid length n=4 must be in [1, L=3]");
  CHECK(message_of([&] { AttentionView<double>::contiguous(buffer.data(), 2, 2, 3, 0, false); }) ==
        "attention view: valid length n=0 must be in [1, L=3]");
  CHECK(message_of([&] { AttentionView<double>::contiguous(nullptr, 2, 2, 3, 2, false); }) ==
        "attention view: data pointer is null");
  CHECK(message_of([&] { AttentionView<double>::contiguous(buffer.data(), 0, 2, 3, 2, false); }) ==
        "attention view: need at least one layer and one head, got layers=0 heads=2");
  CHECK(message_of([&] { AttentionView<double>(buffer.data(), 2, 2, 3, 2, false, 10); }) ==
        "attention view: layer stride 10 is smaller than heads*L*L = 18 (maps of one layer would overlap)");
  CHECK(message_of([&] { AttentionView<double>::batch_slice(buffer.data(), 1, 2, 2, 3, 2, 3, false); }) ==
        "attention view: example 2 is outside the batch of 2");
  xt::xtensor<double, 5> not_square = xt::zeros<double>({1, 1, 1, 3, 4});
  CHECK(message_of([&] { AttentionView<double>::batch_slice(not_square, 0, 3, false); }) ==
        "attention view: attention tensor [layers, B, heads, L, L] has L x L' = 3 x 4, expected square maps");
  const auto v = AttentionView<double>::contiguous(buffer.data(), 2, 2, 3, 2, false);
  CHECK(message_of([&] { v.at(2, 0, 0, 0); }) == "attention view: (layer 2, head 0) is outside [2 layers, 2 heads]");
  CHECK(message_of([&] { v.at(0, 0, 0, 2); }) ==
        "attention view: (query 0, key 2) is outside the valid block of length 2");
}

TEST_CASE("validate accepts real attention maps and names the first broken row") {
  // 1 layer, 2 heads, L = 3, n = 2; padding cells hold NaN and must not be looked at.
  const double N = NAN;
  std::vector<double> good = {
      0.5, 0.5, N,  0.25, 0.75, N, N, N, N,  // head 0
      1.0, 0.0, N,  0.0,  1.0,  N, N, N, N,  // head 1
  };
  AttentionView<double>::contiguous(good.data(), 1, 2, 3, 2, false).validate(1e-12);

  std::vector<double> short_row = good;
  short_row[9 + 3] = 0.5;  // head 1 row 1 = [0.5, 1.0]
  CHECK(message_of([&] { AttentionView<double>::contiguous(short_row.data(), 1, 2, 3, 2, false).validate(1e-6); }) ==
        "attention view: layer 0 head 1 row 1: weights of the allowed keys sum to 1.5, expected 1 (tolerance 1e-06); "
        "wrong layout or valid length?");

  std::vector<double> nan_cell = good;
  nan_cell[1] = NAN;
  CHECK(message_of([&] { AttentionView<double>::contiguous(nan_cell.data(), 1, 2, 3, 2, false).validate(1e-6); }) ==
        "attention view: layer 0 head 0 row 0 key 1: weight nan is not a finite non-negative number");

  // Causal: row 0 of head 0 puts 0.5 on the future key 1.
  CHECK(message_of([&] { AttentionView<double>::contiguous(good.data(), 1, 2, 3, 2, true).validate(1e-6); }) ==
        "attention view: layer 0 head 0 row 0 key 1: causal model puts weight 0.5 on a future key");
  std::vector<double> causal = {1.0, 0.0, N, 0.25, 0.75, N, N, N, N, 1.0, 0.0, N, 0.0, 1.0, N, N, N, N};
  AttentionView<double>::contiguous(causal.data(), 1, 2, 3, 2, true).validate(1e-12);
}
