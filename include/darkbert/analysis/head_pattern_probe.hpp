#pragma once
/// @file
/// Per-head attention summaries of a model on a fixed set of inputs (e.g. 200 MRPC dev pairs): how much
/// each head puts on the neighbouring tokens (positional heads), on [CLS]/[SEP] (vertical heads) and inside
/// its own segment (block heads) — the §3.1 pattern signals, measured as training goes on.
///
/// @code
/// HeadPatternProbe probe(encodings);                  // tokenised once
/// HeadSummary<float> s = probe.measure(model);        // s.neighbour_share(l, h), s.special_share, ...
/// auto strongest = max_over_heads(s.neighbour_share);   // {value, layer, head}
/// @endcode

#include <algorithm>  // std::min
#include <vector>     // std::vector

#include "../model/batch.hpp"
#include "../model/transformer.hpp"
#include "../tokenizer/encoding.hpp"
#include "attention_view.hpp"
#include "head_summary.hpp"
#include "token_annotation.hpp"

namespace darkbert {

/// The strongest head of a per-head table.
struct HeadMaximum {
  double value = 0;  ///< the table's largest entry
  Index layer = -1;  ///< its layer
  Index head = -1;   ///< its head
};

/// The largest entry of a [layers, heads] table and where it is.
template <class Table>
HeadMaximum max_over_heads(const Table& table) {
  HeadMaximum m{-1.0, -1, -1};
  for (Index l = 0; l < static_cast<Index>(table.rows()); ++l)
    for (Index h = 0; h < static_cast<Index>(table.cols()); ++h)
      if (static_cast<double>(table(l, h)) > m.value) m = {static_cast<double>(table(l, h)), l, h};
  return m;
}

/// Per-head summaries of a model on fixed inputs (see the file comment).
class HeadPatternProbe {
 public:
  /// Tokenised inputs (right-padded encodings), run `batch_size` at a time.
  explicit HeadPatternProbe(std::vector<Encoding> encodings, std::size_t batch_size = 20)
      : encodings_(std::move(encodings)), batch_size_(batch_size) {
    require(!encodings_.empty() && batch_size_ > 0, "HeadPatternProbe: need inputs and a positive batch size");
    for (const auto& e : encodings_) tokens_.push_back(annotations_from_encoding(e));
  }

  /// Number of inputs.
  std::size_t size() const { return encodings_.size(); }

  /// Runs `model` on every input and summarises each head (HeadSummary, head_summary.hpp).
  template <class T>
  HeadSummary<T> measure(const Transformer<T>& model, int pad_id) const {
    const auto& c = model.config();
    HeadSummaryAccumulator<T> summary(c.num_layers, c.num_heads);
    ForwardOptions<T> options;
    options.keep_hidden_states = false;
    options.compute_heads = false;
    ForwardResult<T> out;
    for (std::size_t first = 0; first < encodings_.size(); first += batch_size_) {
      const std::size_t last = std::min(encodings_.size(), first + batch_size_);
      const std::vector<Encoding> rows(encodings_.begin() + static_cast<std::ptrdiff_t>(first),
                                       encodings_.begin() + static_cast<std::ptrdiff_t>(last));
      const Batch batch = Batch::from_encodings(rows, pad_id, token_types_for(c));
      model.forward_into(batch, options, out);
      for (std::size_t r = first; r < last; ++r) {
        const auto view = AttentionView<T>::batch_slice(out.attentions.data(), c.num_layers, batch.batch_size,
                                                        c.num_heads, batch.length, static_cast<Index>(r - first),
                                                        static_cast<Index>(tokens_[r].size()), c.causal);
        summary.add(view, tokens_[r]);
      }
    }
    return summary.result();
  }

 private:
  std::vector<Encoding> encodings_;
  std::vector<std::vector<TokenAnnotation>> tokens_;
  std::size_t batch_size_;
};

}  // namespace darkbert
