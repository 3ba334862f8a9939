#pragma once
/// @file
/// A padded batch of token ids, as the model consumes it: [B, L] row-major ids, attention mask and token
/// types (empty token types = all zero; empty mask = all ones).
///
/// @code
/// darkbert::Batch batch = darkbert::Batch::from_encodings(tokenizer.encode_batch(texts));
/// @endcode

#include <cstdint>  // std::int32_t
#include <vector>   // std::vector

#include "../core/error.hpp"
#include "../core/matrix.hpp"
#include "../tokenizer/encoding.hpp"
#include "config.hpp"

namespace darkbert {

/// Whether a batch carries the encodings' token types to the model. A tokenizer marks a pair's second
/// segment with type 1 whatever the model; only models with segment embeddings read it (Hugging Face's GPT-2,
/// RoBERTa and DistilBERT tokenizers do not pass token types to their models).
enum class TokenTypes { keep, drop };

/// keep for models that tell segments apart (type_vocab_size >= 2: BERT), drop otherwise (GPT-2 and
/// DistilBERT have no token types, RoBERTa one, so every type it reads is 0).
inline TokenTypes token_types_for(const ModelConfig& config) {
  return config.type_vocab_size >= 2 ? TokenTypes::keep : TokenTypes::drop;
}

/// A padded batch of token ids as the model consumes it (see the top of this header).
struct Batch {
  Index batch_size = 0;  ///<  B
  Index length = 0;  ///<  L, the padded length
  std::vector<int> input_ids;       ///< [B * L]
  std::vector<int> attention_mask;  ///< [B * L], 1 = real token, 0 = padding (empty = all real)
  std::vector<int> token_type_ids;  ///< [B * L] (empty = all 0)

  /// B·L.
  Index tokens() const { return batch_size * length; }
  /// The id of token i of sequence b.
  int id(Index b, Index i) const { return input_ids[static_cast<std::size_t>(b * length + i)]; }
  /// 1 when token i of sequence b is real, 0 when it is padding.
  int mask(Index b, Index i) const {
    return attention_mask.empty() ? 1 : attention_mask[static_cast<std::size_t>(b * length + i)];
  }
  /// Number of real (non-padding) tokens of sequence b.
  Index valid_length(Index b) const {
    Index n = 0;
    for (Index i = 0; i < length; ++i) n += mask(b, i) != 0;
    return n;
  }

  /// Builds a batch from rows of equal or unequal length, padding on the right with pad_id.
  static Batch from_rows(const std::vector<std::vector<int>>& ids, int pad_id = 0,
                         const std::vector<std::vector<int>>& token_types = {}) {
    Batch b;
    b.batch_size = static_cast<Index>(ids.size());
    for (const auto& row : ids) b.length = std::max<Index>(b.length, static_cast<Index>(row.size()));
    b.input_ids.assign(static_cast<std::size_t>(b.tokens()), pad_id);
    b.attention_mask.assign(static_cast<std::size_t>(b.tokens()), 0);
    if (!token_types.empty()) {
      require(token_types.size() == ids.size(), "Batch::from_rows: ", ids.size(), " id rows but ",
              token_types.size(), " token type rows");
      b.token_type_ids.assign(static_cast<std::size_t>(b.tokens()), 0);
    }
    for (std::size_t r = 0; r < ids.size(); ++r)
      for (std::size_t i = 0; i < ids[r].size(); ++i) {
        const auto at = r * static_cast<std::size_t>(b.length) + i;
        b.input_ids[at] = ids[r][i];
        b.attention_mask[at] = 1;
        if (!token_types.empty()) {
          require(token_types[r].size() == ids[r].size(), "Batch::from_rows: row ", r, " has ", ids[r].size(),
                  " ids but ", token_types[r].size(), " token types");
          b.token_type_ids[at] = token_types[r][i];
        }
      }
    return b;
  }

  /// Stacks encodings (already padded or not) into one batch, padding to the longest with pad_id; with
  /// TokenTypes::drop the batch has no token types (all 0). Pass token_types_for(model.config()).
  static Batch from_encodings(const std::vector<Encoding>& encodings, int pad_id = 0,
                              TokenTypes types = TokenTypes::keep) {
    Batch b;
    b.batch_size = static_cast<Index>(encodings.size());
    for (const auto& e : encodings) b.length = std::max<Index>(b.length, static_cast<Index>(e.size()));
    b.input_ids.assign(static_cast<std::size_t>(b.tokens()), pad_id);
    b.attention_mask.assign(static_cast<std::size_t>(b.tokens()), 0);
    const bool keep_types = types == TokenTypes::keep;
    if (keep_types) b.token_type_ids.assign(static_cast<std::size_t>(b.tokens()), 0);
    for (std::size_t r = 0; r < encodings.size(); ++r) {
      const auto& e = encodings[r];
      for (std::size_t i = 0; i < e.size(); ++i) {
        const auto at = r * static_cast<std::size_t>(b.length) + i;
        b.input_ids[at] = e.ids[i];
        b.attention_mask[at] = e.attention_mask.empty() ? 1 : e.attention_mask[i];
        if (keep_types) b.token_type_ids[at] = e.token_type_ids.empty() ? 0 : e.token_type_ids[i];
      }
    }
    return b;
  }

  /// Checks sizes agree and that there is something to run; throws naming the field and the row. An empty
  /// batch, an empty sequence or a row without a single real token has no output a task head could read
  /// (the first token of BERT's pooler, the last real token of GPT-2's classifier), so each is refused.
  void validate() const {
    require(batch_size >= 0 && length >= 0, "batch: negative size (", batch_size, " x ", length, ")");
    require(batch_size > 0, "batch: no sequences (batch size 0); give at least one input row");
    require(length > 0, "batch: sequences of length 0; every row needs at least one token");
    require(input_ids.size() == static_cast<std::size_t>(tokens()), "batch: input_ids has ", input_ids.size(),
            " entries, expected B*L = ", tokens());
    require(attention_mask.empty() || attention_mask.size() == input_ids.size(), "batch: attention_mask has ",
            attention_mask.size(), " entries, expected ", input_ids.size());
    require(token_type_ids.empty() || token_type_ids.size() == input_ids.size(), "batch: token_type_ids has ",
            token_type_ids.size(), " entries, expected ", input_ids.size());
    for (std::size_t i = 0; i < attention_mask.size(); ++i)
      require(attention_mask[i] == 0 || attention_mask[i] == 1, "batch: attention_mask values must be 0 or 1, got ",
              attention_mask[i], " at [", i / static_cast<std::size_t>(length), "][", i % static_cast<std::size_t>(length), "]");
    for (Index b = 0; b < batch_size; ++b)
      require(valid_length(b) > 0, "batch: row ", b, " has no real token (attention_mask is all 0)");
  }
};

}  // namespace darkbert
