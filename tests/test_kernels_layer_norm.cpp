// LayerNorm (kernels/layer_norm.hpp), forward and backward: the avx2 path's rows (called directly, whatever
// path this process runs) against a double reference on widths around the 8- and 16-lane blocks, at any
// buffer address and in place; and the dispatched raw functions of this process's path.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "darkbert/core/tensor.hpp"  // AlignedAllocator
#include "darkbert/kernels/layer_norm.hpp"

namespace {
using darkbert::Index;

std::vector<float> values(Index n, std::uint64_t seed, double mean = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(mean, 1.5);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<float>(normal(rng));
  return v;
}

struct Reference {
  std::vector<double> out, dx, dw, db;
};

// LN(x + residual) of one row, and its backward for gradient dy, in double.
Reference reference_layer_norm(const std::vector<float>& x, const std::vector<float>& res, const std::vector<float>& w,
                    const std::vector<float>& b, const std::vector<float>& dy, double eps) {
  const auto n = x.size();
  Reference r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  std::vector<double> s(n), xhat(n);
  double mean = 0, var = 0;
  for (std::size_t c = 0; c < n; ++c) mean += s[c] = double(x[c]) + double(res[c]);
  mean /= double(n);
  for (std::size_t c = 0; c < n; ++c) var += (s[c] - mean) * (s[c] - mean);
  const double rstd = 1 / std::sqrt(var / double(n) + eps);
  double g_mean = 0, gx_mean = 0;
  for (std::size_t c = 0; c < n; ++c) {
    xhat[c] = (s[c] - mean) * rstd;
    r.out[c] = xhat[c] * w[c] + b[c];
    g_mean += double(dy[c]) * w[c] / double(n);
    gx_mean += double(dy[c]) * w[c] * xhat[c] / double(n);
    r.dw[c] = double(dy[c]) * xhat[c];
    r.db[c] = dy[c];
  }
  for (std::size_t c = 0; c < n; ++c) r.dx[c] = rstd * (double(dy[c]) * w[c] - g_mean - xhat[c] * gx_mean);
  return r;
}

void check_close(const std::vector<float>& got, const std::vector<double>& expected, double tolerance) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(got[i] - expected[i]) <= tolerance * (1 + std::abs(expected[i])));
  }
}
}  // namespace

#if DARKBERT_HAS_AVX2_KERNEL
TEST_CASE("LayerNorm rows on the avx2 path match a double reference at every width and address, also in place") {
  REQUIRE_MESSAGE(darkbert::cpu_has_avx2(), "this CPU has no AVX2 + FMA: the avx2 path cannot be tested here");
  namespace d = darkbert::kernels::detail;
  const double eps = 1e-5;
  for (Index cols : {1, 7, 8, 9, 15, 16, 17, 33, 128, 768}) {
    CAPTURE(cols);
    // a large mean: the two-pass variance must not lose it
    const auto x = values(cols, 1 + cols, 20.0), res = values(cols, 2 + cols), w = values(cols, 3 + cols),
               b = values(cols, 4 + cols), dy = values(cols, 5 + cols);
    const Reference ref = reference_layer_norm(x, res, w, b, dy, eps);
    std::vector<float> first_out, first_dx;
    for (Index offset = 0; offset < 8; ++offset) {
      CAPTURE(offset);
      using Buffer = std::vector<float, darkbert::AlignedAllocator<float>>;
      Buffer xb(x.size() + 16, -3.0f), rb(x.size() + 16), sb(x.size() + 16, -3.0f), ob(x.size() + 16, -3.0f);
      std::copy(x.begin(), x.end(), xb.begin() + offset);
      std::copy(res.begin(), res.end(), rb.begin() + offset);
      float mean = 0, rstd = 0;
      d::add_layer_norm_row_avx2(xb.data() + offset, rb.data() + offset, sb.data() + offset, ob.data() + offset, cols,
                                 w.data(), b.data(), float(eps), mean, rstd);
      for (Index i = 0; i < Index(ob.size()); ++i)
        if (i < offset || i >= offset + cols) REQUIRE(ob[i] == -3.0f);  // only the row is written
      std::vector<float> out(ob.begin() + offset, ob.begin() + offset + cols);
      for (Index c = 0; c < cols; ++c) REQUIRE(sb[offset + c] == x[c] + res[c]);
      // in place: x and out the same buffer
      d::add_layer_norm_row_avx2(xb.data() + offset, rb.data() + offset, nullptr, xb.data() + offset, cols, w.data(),
                                 b.data(), float(eps), mean, rstd);
      CHECK(std::vector<float>(xb.begin() + offset, xb.begin() + offset + cols) == out);

      // backward: dx into its own buffer, then in place over dy; dw, db accumulated from zero
      Buffer sum(sb.begin() + offset, sb.begin() + offset + cols), g(dy.begin(), dy.end());
      std::vector<float> dx(static_cast<std::size_t>(cols), 0.5f), dw(static_cast<std::size_t>(cols), 0.0f),
          db(static_cast<std::size_t>(cols), 0.0f);
      d::layer_norm_parameter_grads_avx2(sum.data(), &mean, &rstd, g.data(), 1, cols, 0, cols, dw.data(), db.data());
      d::layer_norm_dx_row_avx2(sum.data(), mean, rstd, g.data(), cols, w.data(), dx.data(), true);  // += onto 0.5
      for (auto& v : dx) v -= 0.5f;
      std::vector<float> dx_plain(static_cast<std::size_t>(cols));
      d::layer_norm_dx_row_avx2(sum.data(), mean, rstd, g.data(), cols, w.data(), dx_plain.data(), false);
      d::layer_norm_dx_row_avx2(sum.data(), mean, rstd, g.data(), cols, w.data(), g.data(), false);  // dx aliases dy
      CHECK(std::vector<float>(g.begin(), g.end()) == dx_plain);
      if (offset == 0) {
        check_close(out, ref.out, 2e-5);
        check_close(dx, ref.dx, 2e-5);
        check_close(dx_plain, ref.dx, 2e-5);
        check_close(dw, ref.dw, 2e-5);
        check_close(db, ref.db, 0);
        first_out = out;
        first_dx = dx_plain;
      } else {
        CHECK(out == first_out);  // the same bits at any address
        CHECK(dx_plain == first_dx);
      }
    }
  }
}
#endif

TEST_CASE("the dispatched LayerNorm of this process's kernel path matches a double reference") {
  // Under the <test>@<path> entries (tests/CMakeLists.txt) this runs each path's code through the dispatch.
  const Index rows = 37, cols = 200;  // enough rows for both threads, a width that is no multiple of 16
  const double eps = 1e-12;
  const auto x = values(rows * cols, 11, 3.0), res = values(rows * cols, 12), w = values(cols, 13), b = values(cols, 14),
             dy = values(rows * cols, 15);
  std::vector<float> sum(x.size()), out(x.size()), mean(rows), rstd(rows);
  darkbert::kernels::add_layer_norm_forward_raw<float>(x.data(), res.data(), sum.data(), out.data(), rows, cols, w.data(),
                                                       b.data(), eps, {mean.data(), rstd.data()});
  std::vector<float> dw(cols, 0.0f), db(cols, 0.0f), dx = dy;
  darkbert::kernels::layer_norm_backward_raw<float>(sum.data(), {mean.data(), rstd.data()}, dx.data(), rows, cols, w.data(),
                                                    dw.data(), db.data(), dx.data());  // dx aliases dy
  std::vector<double> dw_ref(cols, 0.0), db_ref(cols, 0.0);
  for (Index r = 0; r < rows; ++r) {
    auto row = [&](const std::vector<float>& m) { return std::vector<float>(m.begin() + r * cols, m.begin() + (r + 1) * cols); };
    const Reference ref = reference_layer_norm(row(x), row(res), w, b, row(dy), eps);
    check_close(row(out), ref.out, 2e-5);
    check_close(row(dx), ref.dx, 2e-5);
    for (Index c = 0; c < cols; ++c) {
      dw_ref[c] += ref.dw[c];
      db_ref[c] += ref.db[c];
    }
  }
  check_close(dw, dw_ref, 2e-5);
  check_close(db, db_ref, 2e-5);
}
