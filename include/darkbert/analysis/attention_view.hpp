#pragma once
/// @file
/// A non-owning, read-only view of the attention maps of ONE example, [layers, heads, L, L]
/// (row = query, column = key), plus the example's valid length n <= L (padding on the right) and whether
/// the model is causal. Every analysis metric takes one of these and looks only at the top-left n x n block.
///
/// Two memory layouts are supported without copying:
///   - a contiguous [layers, heads, L, L] buffer (one example), and
///   - example b of a batched model output [layers, B, heads, L, L] (row-major): within each layer the maps
///     of example b start at b*heads*L*L, and consecutive layers are B*heads*L*L apart.
///
/// @code
/// xt::xtensor<float, 5> att = model_output.attentions;            // [layers, B, heads, L, L]
/// auto view = AttentionView<float>::batch_slice(att, b, n_valid[b], /*causal=*/false);
/// float w = view(layer, head, query, key);
/// auto block = view.block(layer, head);                            // Eigen map [n, n], outer stride L
/// @endcode
///
/// Allowed keys: bidirectional models let every valid query see every valid key (j < n); causal models
/// (GPT-2) let query i see keys j <= i only. Metrics restrict every row sum to the allowed keys.

#include <cmath>    // std::isfinite, std::abs
#include <cstddef>  // std::size_t

#include <Eigen/Core>               // Eigen::Map, Eigen::OuterStride
#include <xtensor/xtensor.hpp>      // xt::xtensor (the model's batched attention output)

#include "darkbert/core/error.hpp"   // darkbert::fail, darkbert::require
#include "darkbert/core/matrix.hpp"  // darkbert::Matrix, darkbert::Index

namespace darkbert {

/// Read-only view of one example's attention maps [layers, heads, L, L] inside any buffer, valid length n.
/// @code
/// auto view = darkbert::AttentionView<float>::batch_slice(out.attentions, /*example=*/0, /*length=*/n, /*causal=*/false);
/// auto row = view.row(3, 7, 0);   // attention of query 0 in head 3.7 over its n keys
/// @endcode
template <class T>
class AttentionView {
 public:
  using value_type = T;  ///<  float or double
  /// The valid n x n block of one head: row-major, rows L elements apart.
  using Block = Eigen::Map<const Matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
  /// One query's weights over the n valid keys.
  using Row = Eigen::Map<const Vector<T>>;

  /// General form: maps of head h in layer l start at data + l*layer_stride + h*L*L.
  /// @code
  /// AttentionView<double> v(ptr, 12, 12, 128, 37, false, 12 * 128 * 128);
  /// @endcode
  AttentionView(const T* data, Index layers, Index heads, Index padded_length, Index length, bool causal,
                Index layer_stride)
      : data_(data),
        layers_(layers),
        heads_(heads),
        padded_(padded_length),
        length_(length),
        layer_stride_(layer_stride),
        causal_(causal) {
    require(data != nullptr, "attention view: data pointer is null");
    require(layers >= 1 && heads >= 1, "attention view: need at least one layer and one head, got layers=",
            layers, " heads=", heads);
    require(padded_length >= 1, "attention view: padded length L must be >= 1, got ", padded_length);
    require(length >= 1 && length <= padded_length, "attention view: valid length n=", length,
            " must be in [1, L=", padded_length, "]");
    require(layer_stride >= heads * padded_length * padded_length, "attention view: layer stride ",
            layer_stride, " is smaller than heads*L*L = ", heads * padded_length * padded_length,
            " (maps of one layer would overlap)");
  }

  /// One example stored contiguously as [layers, heads, L, L].
  /// @code
  /// auto v = AttentionView<float>::contiguous(buffer.data(), 12, 12, 128, n, false);
  /// @endcode
  static AttentionView contiguous(const T* data, Index layers, Index heads, Index padded_length, Index length,
                                  bool causal) {
    return AttentionView(data, layers, heads, padded_length, length, causal, heads * padded_length * padded_length);
  }

  /// Example `example` of a batched buffer [layers, batch, heads, L, L] (row-major).
  /// @code
  /// auto v = AttentionView<float>::batch_slice(att.data(), 12, 8, 12, 128, /*example=*/3, n, false);
  /// @endcode
  static AttentionView batch_slice(const T* data, Index layers, Index batch, Index heads, Index padded_length,
                                   Index example, Index length, bool causal) {
    require(batch >= 1, "attention view: batch size must be >= 1, got ", batch);
    require(example >= 0 && example < batch, "attention view: example ", example, " is outside the batch of ",
            batch);
    require(data != nullptr, "attention view: data pointer is null");
    const Index map_size = padded_length * padded_length;
    return AttentionView(data + example * heads * map_size, layers, heads, padded_length, length, causal,
                         batch * heads * map_size);
  }

  /// Example `example` of the model's attention output [layers, B, heads, L, L].
  /// @code
  /// auto v = AttentionView<float>::batch_slice(out.attentions, 0, 17, false);
  /// @endcode
  static AttentionView batch_slice(const xt::xtensor<T, 5>& attentions, Index example, Index length, bool causal) {
    const auto& s = attentions.shape();
    require(s[3] == s[4], "attention view: attention tensor [layers, B, heads, L, L] has L x L' = ", s[3], " x ",
            s[4], ", expected square maps");
    require(attentions.size() > 0, "attention view: attention tensor is empty");
    return batch_slice(attentions.data(), static_cast<Index>(s[0]), static_cast<Index>(s[1]),
                       static_cast<Index>(s[2]), static_cast<Index>(s[3]), example, length, causal);
  }
  /// A view must not outlive its tensor: refuse temporaries.
  static AttentionView batch_slice(const xt::xtensor<T, 5>&&, Index, Index, bool) = delete;

  /// One example held as an xt::xtensor [layers, heads, L, L].
  static AttentionView contiguous(const xt::xtensor<T, 4>& maps, Index length, bool causal) {
    const auto& s = maps.shape();
    require(s[2] == s[3], "attention view: attention tensor [layers, heads, L, L] has L x L' = ", s[2], " x ", s[3],
            ", expected square maps");
    require(maps.size() > 0, "attention view: attention tensor is empty");
    return contiguous(maps.data(), static_cast<Index>(s[0]), static_cast<Index>(s[1]), static_cast<Index>(s[2]),
                      length, causal);
  }
  static AttentionView contiguous(const xt::xtensor<T, 4>&&, Index, bool) = delete;

  /// Number of layers.
  Index layers() const { return layers_; }
  /// Heads per layer.
  Index heads() const { return heads_; }
  /// L, the padded length of the stored maps.
  Index padded_length() const { return padded_; }  // L
  /// n, the valid (non-padding) length.
  Index length() const { return length_; }         // n, the valid (non-padding) length
  /// Whether keys after the query are masked (GPT-2).
  bool causal() const { return causal_; }

  /// Number of keys query `query` may attend to: n (bidirectional) or query+1 (causal).
  Index allowed_keys(Index query) const { return causal_ ? query + 1 : length_; }
  /// Whether key `key` is visible from query `query` (both < n).
  bool visible(Index query, Index key) const { return !causal_ || key <= query; }

  /// Start of the full [L, L] map of one head.
  const T* map(Index layer, Index head) const { return data_ + layer * layer_stride_ + head * padded_ * padded_; }

  /// Unchecked element access: weight of `key` while processing `query`.
  T operator()(Index layer, Index head, Index query, Index key) const {
    return map(layer, head)[query * padded_ + key];
  }

  /// Checked element access (indices must lie in the valid block).
  T at(Index layer, Index head, Index query, Index key) const {
    require(layer >= 0 && layer < layers_ && head >= 0 && head < heads_, "attention view: (layer ", layer, ", head ",
            head, ") is outside [", layers_, " layers, ", heads_, " heads]");
    require(query >= 0 && query < length_ && key >= 0 && key < length_, "attention view: (query ", query, ", key ",
            key, ") is outside the valid block of length ", length_);
    return (*this)(layer, head, query, key);
  }

  /// The valid n x n block of one head as an Eigen map (no copy).
  Block block(Index layer, Index head) const {
    return Block(map(layer, head), length_, length_, Eigen::OuterStride<>(padded_));
  }

  /// The allowed part of one query row: keys [0, allowed_keys(query)).
  Row row(Index layer, Index head, Index query) const {
    return Row(map(layer, head) + query * padded_, allowed_keys(query));
  }

  /// Checks that this really is a set of attention maps in the expected layout: every valid row is finite and
  /// non-negative, sums to 1 over its allowed keys, and (causal) puts no weight on future keys. Throws a
  /// darkbert::error naming layer, head and row otherwise. O(layers*heads*n^2); call it once per batch in tests
  /// or when wiring up a new model, not in hot loops.
  /// @code
  /// view.validate(1e-4);
  /// @endcode
  void validate(double tolerance) const {
    for (Index l = 0; l < layers_; ++l)
      for (Index h = 0; h < heads_; ++h)
        for (Index i = 0; i < length_; ++i) {
          const T* r = map(l, h) + i * padded_;
          double sum = 0;
          for (Index j = 0; j < length_; ++j) {
            const double w = static_cast<double>(r[j]);
            if (!std::isfinite(w) || w < -tolerance)
              fail("attention view: layer ", l, " head ", h, " row ", i, " key ", j, ": weight ", w,
                   " is not a finite non-negative number");
            if (visible(i, j)) {
              sum += w;
            } else if (w > tolerance) {
              fail("attention view: layer ", l, " head ", h, " row ", i, " key ", j, ": causal model puts weight ", w,
                   " on a future key");
            }
          }
          if (std::abs(sum - 1.0) > tolerance)
            fail("attention view: layer ", l, " head ", h, " row ", i, ": weights of the allowed keys sum to ", sum,
                 ", expected 1 (tolerance ", tolerance, "); wrong layout or valid length?");
        }
  }

 private:
  const T* data_;
  Index layers_;
  Index heads_;
  Index padded_;
  Index length_;
  Index layer_stride_;
  bool causal_;
};

namespace detail {
/// Shared argument checks of the metrics: the view must have the shape the accumulator was built for.
template <class T>
void require_shape(const AttentionView<T>& view, Index layers, Index heads, const char* what) {
  require(view.layers() == layers && view.heads() == heads, what, ": attention maps have ", view.layers(),
          " layers x ", view.heads(), " heads, expected ", layers, " x ", heads);
}
}  // namespace detail

}  // namespace darkbert
