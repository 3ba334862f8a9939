#pragma once
/// @file
/// What a tokenizer returns for one input (a text, a text pair, or pre-split words): ids ready for the
/// model plus the alignment back to the input, so word-level labels (POS tags, FrameNet spans, negation)
/// can be projected onto tokens.
///
/// @code
/// Encoding e = tokenizer.encode_pair("The cat sat.", "It was tired.",
///                                    {.max_length = 16, .padding = Padding::max_length});
/// e.ids            -> [CLS] the cat sat . [SEP] it was tired . [SEP] [PAD] ...
/// e.word_ids[2]    -> 1   (token "cat" comes from word 1 of its sequence)
/// e.offsets[2]     -> {4, 7}  (bytes 4..7 of text a)
/// @endcode

#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace darkbert {

/// A half-open byte range [begin, end) in the UTF-8 input a token came from.
struct Span {
  std::size_t begin = 0;  ///<  first byte
  std::size_t end = 0;  ///<  one past the last byte
  /// Same range.
  friend bool operator==(const Span&, const Span&) = default;
};

/// One tokenized input (single text or pair) with its alignment to the text, parallel vectors of length L.
/// @code
/// darkbert::Encoding e = tokenizer.encode_pair("The cat sat.", "It was tired.");
/// e.tokens;     // {"[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", ...}
/// e.word_ids;   // {-1, 0, 1, 2, 3, -1, 0, ...}
/// @endcode
struct Encoding {
  std::vector<int> ids;               ///< [L] vocabulary ids, special tokens and padding included
  std::vector<std::string> tokens;    ///< [L] the token strings (WordPiece "##x", GPT-2 byte-level "Ġx")
  std::vector<int> token_type_ids;    ///< [L] 0 for the first sequence (and padding), 1 for the second
  std::vector<int> attention_mask;    ///< [L] 1 for real tokens, 0 for padding
  std::vector<int> sequence_ids;      ///< [L] 0 / 1 = which input the token came from, -1 special or padding
  std::vector<int> word_ids;          ///< [L] index of the input word within its sequence, -1 special/padding
  std::vector<Span> offsets;          ///< [L] byte span in its own input text ({0,0} special/padding)
  bool truncated = false;             ///< tokens were removed to fit max_length

  /// L, the number of tokens (padding included).
  std::size_t size() const { return ids.size(); }
};

/// Truncation and padding, as in Hugging Face / Google's run_classifier.
enum class Truncation { none, longest_first, only_first, only_second };
/// Padding::longest pads every encoding of a batch to the longest one (a no-op for a single encode).
enum class Padding { none, max_length, longest };

/// Special tokens, truncation and padding of an encode call: `tokenizer.encode(text, {.max_length = 128, .padding = darkbert::Padding::max_length})`.
struct EncodeOptions {
  bool add_special_tokens = true;         ///< [CLS] a [SEP] (b [SEP]) for BERT; nothing for GPT-2
  std::size_t max_length = 0;             ///< 0 = no limit
  Truncation truncation = Truncation::longest_first;  ///<  how to cut a pair down to max_length
  Padding padding = Padding::none;  ///<  whether and how far to pad
  /// GPT-2: <|endoftext|> before the text and between a pair's texts, as the GPT-2 replication of the paper
  /// built its inputs ("prepend BOS", <|endoftext|> as separator). HF's GPT2Tokenizer adds neither; BERT
  /// tokenizers ignore it. Needs add_special_tokens.
  bool end_of_text_boundaries = false;
};

}  // namespace darkbert
