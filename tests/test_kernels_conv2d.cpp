// 2-d convolution (kernels/conv2d.hpp), forward and backward: every output against a gather that sums in
// the header's stated order, bit for bit, in float and double, over strides, paddings, kernel shapes and
// outputs down to 1 x 1 (the 3 x 3 weight gradient's edge columns and rows); the same bits on one thread
// and on two.
#include <doctest/doctest.h>
#include <omp.h>

#include <random>
#include <vector>

#include "darkbert/kernels/conv2d.hpp"

namespace {
using darkbert::Index;
using darkbert::multiply_add;
using darkbert::kernels::Conv2dGeometry;

template <class T>
std::vector<T> conv_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(normal(rng));
  return v;
}

template <class T>
struct ConvResult {
  std::vector<T> y, dw, db, dx;
};

// The contract, written as gathers: y over (c, u, v), dw over (n, i, j), dx over (o, i, j), each term
// added with multiply_add; every accumulator starts from the buffer's previous value, as the kernels' do.
template <class T>
ConvResult<T> gather_reference(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                               const std::vector<T>& dy, ConvResult<T> r, const Conv2dGeometry& g) {
  const Index B = g.batch, C = g.in_channels, Hi = g.in_height, Wi = g.in_width, O = g.out_channels;
  const Index kh = g.kernel_height, kw = g.kernel_width, S = g.stride, P = g.padding;
  const Index Ho = g.out_height(), Wo = g.out_width();
  auto X = [&](Index n, Index c, Index r_, Index q) -> const T* {
    if (r_ < 0 || r_ >= Hi || q < 0 || q >= Wi) return nullptr;
    return &x[static_cast<std::size_t>(((n * C + c) * Hi + r_) * Wi + q)];
  };
  auto at = [](Index a, Index b_, Index c, Index d, Index B_, Index C_, Index D_) {
    return static_cast<std::size_t>(((a * B_ + b_) * C_ + c) * D_ + d);
  };
  for (Index n = 0; n < B; ++n)
    for (Index o = 0; o < O; ++o)
      for (Index i = 0; i < Ho; ++i)
        for (Index j = 0; j < Wo; ++j) {
          T acc = b[static_cast<std::size_t>(o)];
          for (Index c = 0; c < C; ++c)
            for (Index u = 0; u < kh; ++u)
              for (Index v = 0; v < kw; ++v)
                if (const T* xv = X(n, c, i * S + u - P, j * S + v - P)) acc = multiply_add(*xv, w[at(o, c, u, v, C, kh, kw)], acc);
          r.y[at(n, o, i, j, O, Ho, Wo)] = acc;
        }
  for (Index o = 0; o < O; ++o)
    for (Index c = 0; c < C; ++c)
      for (Index u = 0; u < kh; ++u)
        for (Index v = 0; v < kw; ++v) {
          T acc = r.dw[at(o, c, u, v, C, kh, kw)];
          for (Index n = 0; n < B; ++n)
            for (Index i = 0; i < Ho; ++i)
              for (Index j = 0; j < Wo; ++j)
                if (const T* xv = X(n, c, i * S + u - P, j * S + v - P)) acc = multiply_add(dy[at(n, o, i, j, O, Ho, Wo)], *xv, acc);
          r.dw[at(o, c, u, v, C, kh, kw)] = acc;
        }
  for (Index o = 0; o < O; ++o)
    for (Index n = 0; n < B; ++n)
      for (Index k = 0; k < Ho * Wo; ++k) r.db[static_cast<std::size_t>(o)] += dy[static_cast<std::size_t>((n * O + o) * Ho * Wo + k)];
  for (Index n = 0; n < B; ++n)
    for (Index c = 0; c < C; ++c)
      for (Index r_ = 0; r_ < Hi; ++r_)
        for (Index q = 0; q < Wi; ++q) {
          T acc = r.dx[at(n, c, r_, q, C, Hi, Wi)];
          for (Index o = 0; o < O; ++o)
            for (Index i = 0; i < Ho; ++i)
              for (Index j = 0; j < Wo; ++j) {
                const Index u = r_ + P - i * S, v = q + P - j * S;
                if (u >= 0 && u < kh && v >= 0 && v < kw) acc = multiply_add(dy[at(n, o, i, j, O, Ho, Wo)], w[at(o, c, u, v, C, kh, kw)], acc);
              }
          r.dx[at(n, c, r_, q, C, Hi, Wi)] = acc;
        }
  return r;
}

template <class T>
void check_against_gather(const Conv2dGeometry& g, int threads) {
  const auto B = static_cast<std::size_t>(g.batch), C = static_cast<std::size_t>(g.in_channels),
             O = static_cast<std::size_t>(g.out_channels);
  const auto in = B * C * static_cast<std::size_t>(g.in_height * g.in_width);
  const auto out = B * O * static_cast<std::size_t>(g.out_height() * g.out_width());
  const auto taps = O * C * static_cast<std::size_t>(g.kernel_height * g.kernel_width);
  const auto x = conv_values<T>(in, 1), w = conv_values<T>(taps, 2), b = conv_values<T>(O, 3), dy = conv_values<T>(out, 4);
  // Gradients accumulate into what the buffers hold.
  ConvResult<T> start{std::vector<T>(out), conv_values<T>(taps, 5), conv_values<T>(O, 6), conv_values<T>(in, 7)};
  const auto expected = gather_reference(x, w, b, dy, start, g);
  ConvResult<T> got = start;
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  darkbert::kernels::conv2d_forward(x.data(), w.data(), b.data(), got.y.data(), g);
  darkbert::kernels::conv2d_backward_weight(x.data(), dy.data(), got.dw.data(), got.db.data(), g);
  darkbert::kernels::conv2d_backward_input(w.data(), dy.data(), got.dx.data(), g);
  omp_set_num_threads(before);
  CHECK(got.y == expected.y);
  CHECK(got.dw == expected.dw);
  CHECK(got.db == expected.db);
  CHECK(got.dx == expected.dx);
}

}  // namespace

TEST_CASE("conv2d: forward and both gradients sum in the stated order, bit for bit, on one thread and two") {
  struct Case {
    Index batch, channels, height, width, outputs, kh, kw;
  };
  // 3 x 3 (the fast weight gradient) and other kernels; outputs from 1 x 1 up, odd and even sizes.
  const Case cases[] = {{2, 1, 16, 16, 4, 3, 3}, {3, 2, 9, 7, 3, 3, 3}, {2, 3, 3, 3, 2, 3, 3}, {1, 2, 2, 5, 2, 3, 3},
                        {2, 2, 6, 5, 3, 3, 2}, {2, 1, 5, 5, 2, 1, 1}, {1, 2, 8, 8, 2, 5, 5}};
  for (const Case& k : cases)
    for (Index stride : {1, 2, 3})
      for (Index padding : {0, 1, 2}) {
        const Conv2dGeometry g{k.batch, k.channels, k.height, k.width, k.outputs, k.kh, k.kw, stride, padding};
        if (k.height + 2 * padding < k.kh || k.width + 2 * padding < k.kw) continue;
        CAPTURE(k.height);
        CAPTURE(k.width);
        CAPTURE(k.kh);
        CAPTURE(k.kw);
        CAPTURE(stride);
        CAPTURE(padding);
        for (int threads : {1, 2}) {
          CAPTURE(threads);
          check_against_gather<float>(g, threads);
          check_against_gather<double>(g, threads);
        }
      }
}

TEST_CASE("conv2d: output extents and the outputs each tap reaches") {
  const Conv2dGeometry g{1, 1, 256, 256, 4, 3, 3, 2, 1};
  CHECK(g.out_height() == 128);
  CHECK(g.out_width() == 128);
  // Tap 0 with padding 1 reads column -1 for output 0: it first lands inside at output 1.
  CHECK(g.outputs_of_tap(0, 256, 128) == std::pair<Index, Index>{1, 127});
  CHECK(g.outputs_of_tap(2, 256, 128) == std::pair<Index, Index>{0, 127});
  // A tap beyond a 1-wide input reaches no output.
  const Conv2dGeometry tiny{1, 1, 1, 1, 1, 3, 3, 1, 1};
  CHECK(tiny.outputs_of_tap(2, 1, 1).second < tiny.outputs_of_tap(2, 1, 1).first);
}
