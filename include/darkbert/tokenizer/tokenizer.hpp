#pragma once
/// @file
/// The tokenizer facade: loads a tokenizer folder (WordPiece vocab.txt or GPT-2 BPE vocab.json +
/// merges.txt) and turns texts, text pairs or pre-split words into model-ready Encodings with the
/// alignment back to the input (word_ids, byte offsets).
///
/// @code
/// auto tok = Tokenizer::from_directory("data/vocab/bert-base-uncased");
/// tok.tokenize("Unaffable!")                          // {"una", "##ffa", "##ble", "!"}
/// Encoding e = tok.encode_pair("The cat sat.", "It was tired.",
///                              {.max_length = 16, .padding = Padding::max_length});
/// // e.tokens: [CLS] the cat sat . [SEP] it was tired . [SEP] [PAD] [PAD] [PAD] [PAD] [PAD]
/// // e.word_ids[2] == 1 ("cat" is word 1 of text a), e.offsets[2] == Span{4, 7}
/// auto batch = tok.encode_batch(texts, {.padding = Padding::longest});
/// @endcode
///
/// Special tokens and padding:
///  - BERT: [CLS] a [SEP] (b [SEP]); token_type_ids 0 for [CLS] a [SEP] and padding, 1 for b [SEP];
///    padding uses [PAD].
///  - GPT-2 adds no special tokens (as HF GPT2Tokenizer); a pair is a followed by b (token types 0 / 1).
///    With EncodeOptions::end_of_text_boundaries: <|endoftext|> a (<|endoftext|> b), the GPT-2 replication's
///    inputs; the separator closes a (token type 0), like BERT's first [SEP].
///    GPT-2 has no padding token: padding uses <|endoftext|> (id 50256) with attention_mask 0,
///    sequence_ids / word_ids -1 — mask it out, never attend to it.
/// Truncation (only when max_length > 0; max_length counts the special tokens):
///  - longest_first: remove one token at a time from the end of the currently longer sequence (b on ties);
///    a single sequence is cut at its end;
///  - only_first / only_second: cut that sequence at its end;
///  - none: a sequence longer than max_length is an error (no silent overflow). With max_length 0 nothing
///    is ever truncated or checked.
/// Where HF only logs an error and returns the untruncated sequence (only_first/only_second/single
/// sequence that would have to lose all its tokens, max_length below the special-token count), darkbert
/// throws darkbert::error.
/// "Words" (word_ids): for raw text, the pre-tokenizer's units (BERT: the whitespace/punctuation-split
/// basic tokens, a special-token string in the text counts as one; GPT-2: the regex chunks,
/// <|endoftext|> counts as one), numbered from 0 per sequence, like HF fast tokenizers. For encode_words,
/// the index of the input word (HF is_split_into_words); offsets are then byte spans within that word, and
/// GPT-2 words get a leading space first (HF requires add_prefix_space=True there), so "cat" -> "Ġcat".
/// A Tokenizer is cheap to copy (shared, immutable models) and its const methods may be called from several
/// threads at once (the BPE cache is locked).

#include <algorithm>    // std::max
#include <cstddef>      // std::size_t
#include <filesystem>   // std::filesystem::path, exists, is_directory
#include <memory>       // std::shared_ptr, std::make_shared
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair, std::move
#include <vector>       // std::vector

#include <nlohmann/json.hpp>  // tokenizer_config.json

#include "darkbert/core/error.hpp"
#include "darkbert/tokenizer/bpe.hpp"
#include "darkbert/tokenizer/detail/text_files.hpp"
#include "darkbert/tokenizer/encoding.hpp"
#include "darkbert/tokenizer/token_piece.hpp"
#include "darkbert/tokenizer/wordpiece.hpp"

namespace darkbert {

/// How to build the tokenizer found in a folder. The WordPiece settings left unset come from the folder's
/// tokenizer_config.json when it has them (do_lower_case, strip_accents, tokenize_chinese_chars), else from
/// HF's defaults (uncased, accents stripped when lower-casing, HF flavour). Setting any of them for a
/// BPE folder is an error.
struct TokenizerOptions {
  std::optional<bool> lowercase;  ///<  do_lower_case (WordPiece only)
  std::optional<bool> strip_accents;  ///<  strip accents (WordPiece only)
  std::optional<BertFlavour> flavour;  ///<  Hugging Face or Google rules (WordPiece only)
  std::size_t max_chars_per_word = 0;  ///< 0: flavour default (hf 100, google 200)
};

/// Which tokenizer a Tokenizer holds.
enum class TokenizerKind { wordpiece, bpe };

/// Special-token ids present in the vocabulary.
struct SpecialTokens {
  /// @{
  /// [CLS], [SEP], [PAD], [MASK] and [UNK] (BERT vocabularies)
  std::optional<int> cls, sep, pad, mask, unk;
  /// @}
  std::optional<int> eos;                       ///< GPT-2 <|endoftext|> (also its unk and padding token)
};

/// The tokenizer of a checkpoint folder, WordPiece or byte-level BPE, behind one interface.
/// @code
/// auto tokenizer = darkbert::Tokenizer::from_directory("bert-base-uncased/");
/// auto batch = darkbert::Batch::from_encodings(tokenizer.encode_batch(texts, {.padding = darkbert::Padding::longest}));
/// @endcode
class Tokenizer {
 public:
  /// Wraps a WordPiece tokenizer.
  explicit Tokenizer(WordPieceTokenizer wordpiece)
      : wordpiece_(std::make_shared<const WordPieceTokenizer>(std::move(wordpiece))) {}
  /// Wraps a byte-level BPE tokenizer.
  explicit Tokenizer(BpeTokenizer bpe) : bpe_(std::make_shared<const BpeTokenizer>(std::move(bpe))) {}

  /// Picks WordPiece (dir/vocab.txt) or byte-level BPE (dir/vocab.json + dir/merges.txt). Errors name the
  /// missing or malformed file (and line).
  static Tokenizer from_directory(const std::filesystem::path& dir, const TokenizerOptions& options = {}) {
    namespace fs = std::filesystem;
    std::error_code ec;
    require(fs::is_directory(dir, ec), "tokenizer directory '", dir.string(), "' does not exist or is not a directory");
    const fs::path vocab_txt = dir / "vocab.txt", vocab_json = dir / "vocab.json", merges = dir / "merges.txt";
    const bool has_txt = fs::exists(vocab_txt, ec), has_json = fs::exists(vocab_json, ec),
               has_merges = fs::exists(merges, ec);
    if (has_txt && (has_json || has_merges))
      fail("tokenizer directory '", dir.string(), "' holds both vocab.txt (WordPiece) and ",
           has_json ? "vocab.json" : "merges.txt", " (BPE); keep the files of one tokenizer only");
    if (has_txt) return Tokenizer(WordPieceTokenizer(vocab_txt, wordpiece_options(dir, options)));
    if (has_json || has_merges) {
      require(has_json, "missing '", vocab_json.string(), "' (byte-level BPE needs vocab.json next to merges.txt)");
      require(has_merges, "missing '", merges.string(), "' (byte-level BPE needs merges.txt next to vocab.json)");
      require(!options.lowercase && !options.strip_accents && !options.flavour && options.max_chars_per_word == 0,
              "tokenizer directory '", dir.string(),
              "' holds a byte-level BPE tokenizer: lowercase / strip_accents / flavour / max_chars_per_word "
              "only apply to WordPiece");
      return Tokenizer(BpeTokenizer(vocab_json, merges));
    }
    fail("no tokenizer files in '", dir.string(), "': expected vocab.txt (WordPiece) or vocab.json + merges.txt "
         "(byte-level BPE)");
  }

  /// Which tokenizer this is.
  TokenizerKind kind() const { return wordpiece_ ? TokenizerKind::wordpiece : TokenizerKind::bpe; }
  /// The WordPiece tokenizer, or null for BPE.
  const WordPieceTokenizer* wordpiece() const { return wordpiece_.get(); }
  /// The BPE tokenizer, or null for WordPiece.
  const BpeTokenizer* bpe() const { return bpe_.get(); }

  /// The token strings of a text, no special tokens (e.g. {"hello", ",", "world"} / {"Hello", ",", "Ġworld"}).
  std::vector<std::string> tokenize(std::string_view text) const {
    std::vector<TokenPiece> pieces;
    append_pieces(text, pieces, false);
    std::vector<std::string> out;
    out.reserve(pieces.size());
    for (const auto& p : pieces) out.emplace_back(p.token);
    return out;
  }

  /// The ids of tokenize(text).
  std::vector<int> token_ids(std::string_view text) const {
    std::vector<TokenPiece> pieces;
    append_pieces(text, pieces, false);
    std::vector<int> out;
    out.reserve(pieces.size());
    for (const auto& p : pieces) out.push_back(p.id);
    return out;
  }

  /// One text: `[CLS] text [SEP]` for BERT, the bare tokens for GPT-2.
  Encoding encode(std::string_view text, const EncodeOptions& options = {}) const {
    std::vector<TokenPiece> a;
    append_pieces(text, a, false);
    return assemble(std::move(a), nullptr, options);
  }

  /// A pair: `[CLS] a [SEP] b [SEP]` with token types 0 and 1 (BERT); a and b concatenated (GPT-2).
  Encoding encode_pair(std::string_view text_a, std::string_view text_b, const EncodeOptions& options = {}) const {
    std::vector<TokenPiece> a, b;
    append_pieces(text_a, a, false);
    append_pieces(text_b, b, false);
    return assemble(std::move(a), &b, options);
  }

  /// Pre-split input (HF is_split_into_words): word_ids index `words`, offsets are spans within each word.
  Encoding encode_words(std::span<const std::string> words, const EncodeOptions& options = {}) const {
    return assemble(word_pieces(words), nullptr, options);
  }

  /// A pair of pre-split inputs (see encode_words).
  Encoding encode_words_pair(std::span<const std::string> words_a, std::span<const std::string> words_b,
                             const EncodeOptions& options = {}) const {
    std::vector<TokenPiece> b = word_pieces(words_b);
    return assemble(word_pieces(words_a), &b, options);
  }

  /// One Encoding per text; Padding::longest pads all to the longest, Padding::max_length to max_length.
  std::vector<Encoding> encode_batch(std::span<const std::string> texts, const EncodeOptions& options = {}) const {
    std::vector<Encoding> out;
    out.reserve(texts.size());
    for (const std::string& t : texts) out.push_back(encode(t, options));
    pad_batch(out, options);
    return out;
  }

  /// One Encoding per pair, padded as options say.
  std::vector<Encoding> encode_pair_batch(std::span<const std::pair<std::string, std::string>> pairs,
                                          const EncodeOptions& options = {}) const {
    std::vector<Encoding> out;
    out.reserve(pairs.size());
    for (const auto& [a, b] : pairs) out.push_back(encode_pair(a, b, options));
    pad_batch(out, options);
    return out;
  }

  /// Number of tokens in the vocabulary.
  std::size_t vocab_size() const { return wordpiece_ ? wordpiece_->vocab_size() : bpe_->vocab_size(); }
  /// The id of a token, or nullopt if it is not in the vocabulary.
  std::optional<int> find(std::string_view token) const {
    return wordpiece_ ? wordpiece_->find(token) : bpe_->find(token);
  }
  /// Unknown tokens map to the unk id ([UNK]; <|endoftext|> for GPT-2, as in HF).
  int token_to_id(std::string_view token) const {
    return wordpiece_ ? wordpiece_->token_to_id(token) : bpe_->token_to_id(token);
  }
  /// The token string of an id; throws if the id is outside the vocabulary.
  const std::string& id_to_token(int id) const {
    return wordpiece_ ? wordpiece_->id_to_token(id) : bpe_->id_to_token(id);
  }

  /// The special-token ids this vocabulary has.
  SpecialTokens special_tokens() const {
    SpecialTokens s;
    if (wordpiece_) {
      s.cls = wordpiece_->cls_id();
      s.sep = wordpiece_->sep_id();
      s.pad = wordpiece_->pad_id();
      s.mask = wordpiece_->mask_id();
      s.unk = wordpiece_->unk_id();
    } else {
      s.eos = bpe_->eos_id();
      s.unk = bpe_->eos_id();
    }
    return s;
  }

  /// The id padding uses: [PAD] for BERT, <|endoftext|> for GPT-2 (always with attention_mask 0).
  int pad_id() const {
    if (bpe_) return bpe_->eos_id();
    return required(wordpiece_->pad_id(), "[PAD]", "pad");
  }

 private:
  static WordPieceOptions wordpiece_options(const std::filesystem::path& dir, const TokenizerOptions& options) {
    WordPieceOptions o;
    std::optional<bool> lower = options.lowercase, strip = options.strip_accents, chinese;
    const std::filesystem::path config = dir / "tokenizer_config.json";
    std::error_code ec;
    if (std::filesystem::exists(config, ec)) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(detail::read_text_file(config, "tokenizer config"));
      } catch (const nlohmann::json::exception& e) {
        fail(config.string(), ": ", e.what());
      }
      require(j.is_object(), config.string(), ": expected a JSON object");
      auto flag = [&](const char* key, std::optional<bool>& target) {
        if (target || !j.contains(key) || j[key].is_null()) return;
        require(j[key].is_boolean(), config.string(), ": \"", key, "\" must be true, false or null");
        target = j[key].get<bool>();
      };
      flag("do_lower_case", lower);
      flag("strip_accents", strip);
      flag("tokenize_chinese_chars", chinese);
    }
    o.lowercase = lower.value_or(true);
    o.strip_accents = strip;
    o.flavour = options.flavour.value_or(BertFlavour::hf);
    o.max_chars_per_word = options.max_chars_per_word;
    o.tokenize_chinese_chars = chinese.value_or(true);
    return o;
  }

  void append_pieces(std::string_view text, std::vector<TokenPiece>& out, bool is_word) const {
    if (wordpiece_) {
      wordpiece_->tokenize(text, out);
    } else {
      bpe_->tokenize(text, out, /*add_prefix_space=*/is_word);
    }
  }

  std::vector<TokenPiece> word_pieces(std::span<const std::string> words) const {
    std::vector<TokenPiece> out;
    for (std::size_t w = 0; w < words.size(); ++w) {
      const std::size_t first = out.size();
      append_pieces(words[w], out, true);
      for (std::size_t i = first; i < out.size(); ++i) out[i].word = static_cast<int>(w);
    }
    return out;
  }

  int required(const std::optional<int>& id, const char* token, const char* role) const {
    if (!id) fail(wordpiece_->source(), ": no ", token, " token, needed as the ", role, " token");
    return *id;
  }

  /// Removes `remove` tokens from the end of one sequence; it must keep at least one token (HF rule).
  static void cut(std::vector<TokenPiece>& seq, std::size_t remove, const char* which, std::size_t max_length) {
    if (seq.size() <= remove)
      fail("cannot truncate to max_length ", max_length, ": ", remove, " tokens must go but ", which, " has only ",
           seq.size(), " (it must keep at least one)");
    seq.resize(seq.size() - remove);
  }

  Encoding assemble(std::vector<TokenPiece> a, std::vector<TokenPiece>* b, const EncodeOptions& o) const {
    const bool pair = b != nullptr;
    const bool with_specials = o.add_special_tokens && wordpiece_ != nullptr;
    const bool with_boundaries = o.add_special_tokens && o.end_of_text_boundaries && bpe_ != nullptr;
    const std::size_t specials = with_specials ? (pair ? 3 : 2) : with_boundaries ? (pair ? 2 : 1) : 0;
    bool truncated = false;
    const std::size_t total = a.size() + (pair ? b->size() : 0) + specials;
    if (o.max_length > 0 && total > o.max_length) {
      const std::size_t remove = total - o.max_length;
      switch (o.truncation) {
        case Truncation::none:
          fail("input of ", total, " tokens (", specials, " special tokens included) exceeds max_length ",
               o.max_length, " and truncation is none");
        case Truncation::longest_first:
          if (!pair) {
            cut(a, remove, "the sequence", o.max_length);
          } else {
            require(o.max_length >= specials, "max_length ", o.max_length, " is smaller than the ", specials,
                    " special tokens of a pair");
            for (std::size_t r = 0; r < remove; ++r) {
              if (a.size() > b->size()) {
                a.pop_back();
              } else {
                b->pop_back();
              }
            }
          }
          break;
        case Truncation::only_first:
          cut(a, remove, "the first sequence", o.max_length);
          break;
        case Truncation::only_second:
          require(pair, "truncation only_second needs a pair of sequences");
          cut(*b, remove, "the second sequence", o.max_length);
          break;
      }
      truncated = true;
    }

    Encoding e;
    const std::size_t n = std::max(total, o.padding == Padding::max_length ? o.max_length : 0);
    e.ids.reserve(n);
    e.tokens.reserve(n);
    e.token_type_ids.reserve(n);
    e.attention_mask.reserve(n);
    e.sequence_ids.reserve(n);
    e.word_ids.reserve(n);
    e.offsets.reserve(n);
    auto push = [&e](int id, std::string_view token, int type, int sequence, int word, Span span) {
      e.ids.push_back(id);
      e.tokens.emplace_back(token);
      e.token_type_ids.push_back(type);
      e.attention_mask.push_back(1);
      e.sequence_ids.push_back(sequence);
      e.word_ids.push_back(word);
      e.offsets.push_back(span);
    };
    int cls = 0, sep = 0;
    if (with_specials) {
      cls = required(wordpiece_->cls_id(), "[CLS]", "classification");
      sep = required(wordpiece_->sep_id(), "[SEP]", "separator");
      push(cls, "[CLS]", 0, -1, -1, {});
    }
    const int end_of_text = with_boundaries ? bpe_->eos_id() : 0;
    if (with_boundaries) push(end_of_text, BpeTokenizer::end_of_text, 0, -1, -1, {});
    for (const auto& p : a) push(p.id, p.token, 0, 0, p.word, p.span);
    if (with_specials) push(sep, "[SEP]", 0, -1, -1, {});
    if (with_boundaries && pair) push(end_of_text, BpeTokenizer::end_of_text, 0, -1, -1, {});
    if (pair) {
      for (const auto& p : *b) push(p.id, p.token, 1, 1, p.word, p.span);
      if (with_specials) push(sep, "[SEP]", 1, -1, -1, {});
    }
    e.truncated = truncated;
    if (o.padding == Padding::max_length) {
      require(o.max_length > 0, "padding to max_length needs max_length > 0");
      pad_to(e, o.max_length);
    }
    return e;
  }

  void pad_to(Encoding& e, std::size_t length) const {
    if (e.size() >= length) return;
    const int pad = pad_id();
    const std::string& token = id_to_token(pad);
    while (e.size() < length) {
      e.ids.push_back(pad);
      e.tokens.push_back(token);
      e.token_type_ids.push_back(0);
      e.attention_mask.push_back(0);
      e.sequence_ids.push_back(-1);
      e.word_ids.push_back(-1);
      e.offsets.push_back({});
    }
  }

  void pad_batch(std::vector<Encoding>& batch, const EncodeOptions& o) const {
    if (o.padding != Padding::longest) return;
    std::size_t longest = 0;
    for (const auto& e : batch) longest = std::max(longest, e.size());
    for (auto& e : batch) pad_to(e, longest);
  }

  std::shared_ptr<const WordPieceTokenizer> wordpiece_;
  std::shared_ptr<const BpeTokenizer> bpe_;
};

}  // namespace darkbert
