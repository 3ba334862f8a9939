#pragma once
/// @file
/// Batch normalisation over the channel axis of [N, C, P] tensors (P = H·W for images), forward and
/// backward side by side:
/// @code
/// training   mean_c = mean over (n, p) of x[n, c, p],  var_c = the same of (x - mean_c)^2 (biased)
///            y = (x - mean_c) / sqrt(var_c + eps) · gain_c + shift_c
///            running_mean_c = (1 - momentum) · running_mean_c + momentum · mean_c
///            running_var_c  = (1 - momentum) · running_var_c  + momentum · var_c · M / (M - 1)   (M = N·P)
/// inference  y = (x - running_mean_c) / sqrt(running_var_c + eps) · gain_c + shift_c
/// @endcode
/// The running variance takes the unbiased estimate, as PyTorch's BatchNorm2d does, so a network trained
/// with either predicts the same in inference. The statistics a training pass saves are [C] (mean, then
/// 1 / sqrt(var + eps)).
///
/// Every per-channel reduction runs in double in one fixed order (n, then p), on the calling thread: the
/// same input gives the same bits on every run and with every thread count.
///
/// @code
/// std::vector<float> mean(C), rstd(C);
/// darkbert::kernels::batch_norm_forward_training(x, y, {N, C, P}, gain, shift, 1e-5, {mean.data(), rstd.data()});
/// darkbert::kernels::batch_norm_backward_training(x, {mean.data(), rstd.data()}, dy, {N, C, P}, gain,
///                                                 dgain, dshift, dx);
/// @endcode

#include <cmath>  // std::sqrt

#include "../core/error.hpp"   // darkbert::require
#include "../core/matrix.hpp"  // darkbert::Index

namespace darkbert::kernels {

/// The extents of a batch-normalised tensor x [batch, channels, plane].
struct BatchNormShape {
  Index batch = 0;     ///< N
  Index channels = 0;  ///< C
  Index plane = 1;     ///< P: H·W for images, 1 for [N, C] features

  /// N·P: the values each channel's statistics are taken over.
  Index per_channel() const { return batch * plane; }
  /// Index of x[n, c, 0].
  Index offset(Index n, Index c) const { return (n * channels + c) * plane; }
};

/// Per-channel statistics: the batch's in training, the running ones' in inference. [C] each.
template <class T>
struct BatchNormStats {
  T* mean = nullptr;  ///< [C]
  T* rstd = nullptr;  ///< [C] 1 / sqrt(var + eps)
};

/// The running statistics a training pass updates (both null: not kept) and their momentum.
template <class T>
struct BatchNormRunning {
  T* mean = nullptr;      ///< [C]
  T* variance = nullptr;  ///< [C] unbiased
  double momentum = 0.1;  ///< weight of the new batch
};

/// Training forward: y from the batch's statistics, saved into `stats`; `running` updated when given.
/// x, y [N, C, P] (y may alias x); gain, shift [C].
template <class T>
void batch_norm_forward_training(const T* x, T* y, BatchNormShape s, const T* gain, const T* shift, double eps,
                                 BatchNormStats<T> stats, BatchNormRunning<T> running = {}) {
  const Index M = s.per_channel();
  require(M >= 2, "batch_norm: training needs more than one value per channel (N·H·W = ", M, ")");
  for (Index c = 0; c < s.channels; ++c) {
    double sum = 0;
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) sum += static_cast<double>(x[s.offset(n, c) + p]);
    const double mean = sum / static_cast<double>(M);
    double squares = 0;  // two passes: exact even when the mean is large
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) {
        const double d = static_cast<double>(x[s.offset(n, c) + p]) - mean;
        squares += d * d;
      }
    const double variance = squares / static_cast<double>(M);
    const double rstd = 1.0 / std::sqrt(variance + eps);
    stats.mean[c] = static_cast<T>(mean);
    stats.rstd[c] = static_cast<T>(rstd);
    if (running.mean) {
      const double m = running.momentum;
      running.mean[c] = static_cast<T>((1 - m) * static_cast<double>(running.mean[c]) + m * mean);
      running.variance[c] = static_cast<T>((1 - m) * static_cast<double>(running.variance[c]) +
                                           m * variance * static_cast<double>(M) / static_cast<double>(M - 1));
    }
    const double g = static_cast<double>(gain[c]), b = static_cast<double>(shift[c]);
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) {
        const Index at = s.offset(n, c) + p;
        y[at] = static_cast<T>((static_cast<double>(x[at]) - mean) * rstd * g + b);
      }
  }
}

/// The statistics inference uses: the running mean and 1 / sqrt(running variance + eps), into `stats`.
template <class T>
void batch_norm_inference_stats(const T* running_mean, const T* running_variance, Index channels, double eps,
                                BatchNormStats<T> stats) {
  for (Index c = 0; c < channels; ++c) {
    require(running_variance[c] >= 0, "batch_norm: running variance ", running_variance[c], " < 0 in channel ", c);
    stats.mean[c] = running_mean[c];
    stats.rstd[c] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(running_variance[c]) + eps));
  }
}

/// Inference forward with fixed statistics (batch_norm_inference_stats): an affine map per channel.
template <class T>
void batch_norm_forward_inference(const T* x, T* y, BatchNormShape s, const T* gain, const T* shift,
                                  BatchNormStats<const T> stats) {
  for (Index n = 0; n < s.batch; ++n)
    for (Index c = 0; c < s.channels; ++c) {
      const double mean = static_cast<double>(stats.mean[c]), rstd = static_cast<double>(stats.rstd[c]);
      const double g = static_cast<double>(gain[c]), b = static_cast<double>(shift[c]);
      for (Index p = 0; p < s.plane; ++p) {
        const Index at = s.offset(n, c) + p;
        y[at] = static_cast<T>((static_cast<double>(x[at]) - mean) * rstd * g + b);
      }
    }
}

/// Backward of the training forward, with x̂ = (x - mean) · rstd and M = N·P (the statistics depend on x):
/// @code
/// dshift_c += Σ dy,   dgain_c += Σ dy · x̂                                   (null: frozen)
/// dx       += gain_c · rstd_c · (dy - Σ dy / M - x̂ · Σ (dy · x̂) / M)        (null: not needed)
/// @endcode
template <class T>
void batch_norm_backward_training(const T* x, BatchNormStats<const T> stats, const T* dy, BatchNormShape s,
                                  const T* gain, T* dgain, T* dshift, T* dx) {
  const double M = static_cast<double>(s.per_channel());
  for (Index c = 0; c < s.channels; ++c) {
    const double mean = static_cast<double>(stats.mean[c]), rstd = static_cast<double>(stats.rstd[c]);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) {
        const Index at = s.offset(n, c) + p;
        const double g = static_cast<double>(dy[at]);
        sum_dy += g;
        sum_dy_xhat += g * (static_cast<double>(x[at]) - mean) * rstd;
      }
    if (dshift) dshift[c] += static_cast<T>(sum_dy);
    if (dgain) dgain[c] += static_cast<T>(sum_dy_xhat);
    if (!dx) continue;
    const double scale = static_cast<double>(gain[c]) * rstd;
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) {
        const Index at = s.offset(n, c) + p;
        const double xhat = (static_cast<double>(x[at]) - mean) * rstd;
        dx[at] += static_cast<T>(scale * (static_cast<double>(dy[at]) - sum_dy / M - xhat * sum_dy_xhat / M));
      }
  }
}

/// Backward of the inference forward (fixed statistics): dshift_c += Σ dy, dgain_c += Σ dy · x̂,
/// dx += gain_c · rstd_c · dy.
template <class T>
void batch_norm_backward_inference(const T* x, BatchNormStats<const T> stats, const T* dy, BatchNormShape s,
                                   const T* gain, T* dgain, T* dshift, T* dx) {
  for (Index c = 0; c < s.channels; ++c) {
    const double mean = static_cast<double>(stats.mean[c]), rstd = static_cast<double>(stats.rstd[c]);
    const double scale = static_cast<double>(gain[c]) * rstd;
    double sum_dy = 0, sum_dy_xhat = 0;
    for (Index n = 0; n < s.batch; ++n)
      for (Index p = 0; p < s.plane; ++p) {
        const Index at = s.offset(n, c) + p;
        const double g = static_cast<double>(dy[at]);
        sum_dy += g;
        sum_dy_xhat += g * (static_cast<double>(x[at]) - mean) * rstd;
        if (dx) dx[at] += static_cast<T>(scale * g);
      }
    if (dshift) dshift[c] += static_cast<T>(sum_dy);
    if (dgain) dgain[c] += static_cast<T>(sum_dy_xhat);
  }
}

}  // namespace darkbert::kernels
