#pragma once
/// @file
/// GPT-2's byte-level BPE tokenizer (Hugging Face GPT2Tokenizer, slow / OpenAI encoder.py):
///  1. split the text on "<|endoftext|>" (kept as one token, surrounding spaces untouched);
///  2. pre-tokenize with the pattern
///       `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
///     (hand-written matcher over the Python `regex` module's `\s`, `\p{L}`, `\p{N}` sets);
///  3. map each chunk's UTF-8 bytes through bytes_to_unicode (e.g. space -> "Ġ");
///  4. merge adjacent symbols by merges.txt rank, lowest rank first, all occurrences left to right.
/// Results of step 4 are cached per chunk (thread-safe). Every token keeps the byte span it covers.
///
/// @code
/// BpeTokenizer gpt2("vocab/gpt2/vocab.json", "vocab/gpt2/merges.txt");
/// gpt2.tokenize("Hello world!")         // {"Hello", "Ġworld", "!"}
/// gpt2.token_to_id("<|endoftext|>")      // 50256
/// @endcode

#include <array>        // std::array
#include <climits>      // INT_MAX
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <filesystem>   // std::filesystem::path
#include <memory>       // std::unique_ptr
#include <mutex>        // std::mutex, std::lock_guard
#include <functional>   // std::greater
#include <optional>     // std::optional
#include <queue>        // std::priority_queue (long chunks)
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map (merge table, byte alphabet)
#include <utility>      // std::move
#include <vector>       // std::vector

#include <nlohmann/json.hpp>  // vocab.json

#include "darkbert/core/error.hpp"
#include "darkbert/io/json.hpp"
#include "darkbert/tokenizer/detail/text_files.hpp"
#include "darkbert/tokenizer/token_piece.hpp"
#include "darkbert/tokenizer/unicode.hpp"

namespace darkbert {

namespace detail {

struct BpeTestAccess;  ///< tests compare merge_short and merge_long

/// GPT-2's reversible byte -> printable character map: printable Latin-1 bytes map to themselves, the
/// others to U+0100.. in byte order (so space 0x20 -> U+0120 'Ġ', newline 0x0A -> U+010A 'Ċ').
inline std::array<char32_t, 256> bytes_to_unicode() {
  std::array<char32_t, 256> map{};
  char32_t next = 256;
  for (unsigned b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    map[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return map;
}

}  // namespace detail

/// GPT-2's byte-level BPE tokenizer, as Hugging Face's GPT2Tokenizer (see the top of this header).
/// @code
/// darkbert::BpeTokenizer bpe("gpt2/vocab.json", "gpt2/merges.txt");
/// std::vector<std::string> tokens = bpe.tokenize("Hello world");   // {"Hello", "Ġworld"}
/// @endcode
class BpeTokenizer {
 public:
  /// GPT-2's one special token (end of text, also unknown and padding).
  static constexpr std::string_view end_of_text = "<|endoftext|>";

  /// Loads vocab.json ({"token": id, ...}, ids 0..N-1) and merges.txt ("#version" line, then one
  /// "left right" pair per line, rank = order). Errors name the file (and line for merges.txt; line and
  /// column for JSON syntax errors in vocab.json).
  BpeTokenizer(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt)
      : cache_(std::make_unique<Cache>()) {
    const auto b2u = detail::bytes_to_unicode();
    for (unsigned b = 0; b < 256; ++b) unicode_to_byte_[b2u[b]] = static_cast<unsigned char>(b);
    load_vocab(vocab_json);
    for (unsigned b = 0; b < 256; ++b) {
      std::string s;
      unicode::append_utf8(s, b2u[b]);
      byte_symbol_[b] = symbol_id(s);
    }
    load_merges(merges_txt);
    symbol_bytes_.reserve(symbols_.size());
    for (const std::string& sym : symbols_) {
      std::size_t n = 0;
      for (unsigned char ch : sym) n += (ch & 0xC0) != 0x80;  // one character per input byte
      symbol_bytes_.push_back(n);
    }
    const auto eos = find(end_of_text);
    require(eos.has_value(), vocab_source_, ": no '", end_of_text, "' entry (GPT-2 BPE needs it)");
    eos_id_ = *eos;
  }

  /// Appends the tokens of `text` (nothing added); word indices count pre-tokenizer chunks from 0.
  /// add_prefix_space puts a space before the text (HF add_prefix_space / is_split_into_words), so a
  /// word tokenizes as it would in running text ("cat" -> "Ġcat"); the space gets an empty span.
  /// Throws darkbert::error naming the byte offset on invalid UTF-8.
  void tokenize(std::string_view text, std::vector<TokenPiece>& out, bool add_prefix_space = false) const {
    std::vector<unicode::TextChar> chars;
    if (add_prefix_space) chars.push_back({U' ', 0, 0});
    unicode::decode_utf8(text, chars);
    int word = 0;
    std::vector<int> symbols;
    std::string scratch;
    const std::size_t n = chars.size();
    std::size_t segment = 0;
    for (std::size_t i = 0; i < n;) {
      if (chars[i].cp != U'<' || !matches_end_of_text(chars, i)) {
        ++i;
        continue;
      }
      chunk_and_merge(text, std::span(chars).subspan(segment, i - segment), word, symbols, scratch, out);
      out.push_back({eos_id_, end_of_text, Span{chars[i].begin, chars[i + end_of_text.size() - 1].end}, word++});
      i += end_of_text.size();
      segment = i;
    }
    chunk_and_merge(text, std::span(chars).subspan(segment), word, symbols, scratch, out);
  }

  /// The token strings of `text`, e.g. {"Hello", "Ġworld", "!"}.
  std::vector<std::string> tokenize(std::string_view text) const {
    std::vector<TokenPiece> pieces;
    tokenize(text, pieces);
    return token_strings(pieces);
  }

  /// The pre-tokenizer alone: the chunks of `text` as byte spans (no <|endoftext|> handling).
  std::vector<Span> pre_tokenize(std::string_view text) const {
    std::vector<unicode::TextChar> chars;
    unicode::decode_utf8(text, chars);
    std::vector<Span> out;
    for (std::size_t i = 0; i < chars.size();) {
      const std::size_t j = match_chunk(chars, i);
      out.push_back({chars[i].begin, chars[j - 1].end});
      i = j;
    }
    return out;
  }

  /// Number of tokens in vocab.json.
  std::size_t vocab_size() const { return vocab_size_; }
  /// The id of a token, or nullopt if it is not in the vocabulary.
  std::optional<int> find(std::string_view token) const {
    const auto it = symbol_ids_.find(token);
    if (it == symbol_ids_.end() || it->second >= static_cast<int>(vocab_size_)) return std::nullopt;
    return it->second;
  }
  /// The id of a token; for unknown tokens the id of <|endoftext|> (GPT-2's unk token in HF).
  int token_to_id(std::string_view token) const { return find(token).value_or(eos_id_); }
  /// The token string of an id; throws if the id is outside the vocabulary.
  const std::string& id_to_token(int id) const {
    require(id >= 0 && static_cast<std::size_t>(id) < vocab_size_, vocab_source_, ": token id ", id,
            " is outside the vocabulary (size ", vocab_size_, ")");
    return symbols_[static_cast<std::size_t>(id)];
  }
  /// The id of <|endoftext|>.
  int eos_id() const { return eos_id_; }
  /// Number of merge rules (merges.txt lines after the header).
  std::size_t merge_count() const { return merges_.size(); }
  /// Decodes byte-level token strings back to text bytes (the inverse of steps 2-4).
  std::string decode(std::span<const int> ids) const {
    std::string out;
    for (int id : ids) {
      for (char32_t c : unicode::decode_utf8(id_to_token(id))) {
        const auto it = unicode_to_byte_.find(c);
        require(it != unicode_to_byte_.end(), "token ", id, " ('", id_to_token(id), "') is not byte-level");
        out.push_back(static_cast<char>(it->second));
      }
    }
    return out;
  }

 private:
  struct Merge {
    int rank;
    int merged;
  };
  struct Cache {
    std::mutex mutex;
    detail::StringMap<std::vector<int>> map;
  };
  static constexpr std::size_t max_cache_entries = 1 << 18;
  static constexpr std::size_t max_cached_chunk_bytes = 256;
  static constexpr std::size_t short_chunk_bytes = 64;  // merge_short up to here, merge_long above
  friend struct detail::BpeTestAccess;

  static std::uint64_t pair_key(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }

  /// The symbol id of a byte-level string, adding it past the vocabulary if it is not a vocab entry.
  int symbol_id(const std::string& s) {
    const auto it = symbol_ids_.find(s);
    if (it != symbol_ids_.end()) return it->second;
    const int id = static_cast<int>(symbols_.size());
    symbols_.push_back(s);
    symbol_ids_.emplace(s, id);
    return id;
  }

  void load_vocab(const std::filesystem::path& path) {
    vocab_source_ = path.string();
    const std::string data = detail::read_text_file(path, "vocab file");
    // Strict: a token repeated as a key would otherwise silently keep only its last id.
    const nlohmann::json j = parse_json(data, vocab_source_, "");
    require(j.is_object(), vocab_source_, ": expected a JSON object {\"token\": id, ...}, got ", j.type_name());
    require(!j.empty(), vocab_source_, ": empty vocabulary");
    std::vector<const std::string*> by_id(j.size(), nullptr);
    for (const auto& [token, value] : j.items()) {
      if (!value.is_number_integer())
        fail(vocab_source_, ": entry \"", token, "\": id must be an integer, got ", value.dump());
      const auto id = value.get<long long>();
      if (id < 0 || static_cast<std::size_t>(id) >= j.size())
        fail(vocab_source_, ": entry \"", token, "\": id ", id, " outside 0..", j.size() - 1,
             " (ids must number the ", j.size(), " entries from 0)");
      auto& slot = by_id[static_cast<std::size_t>(id)];
      if (slot != nullptr) fail(vocab_source_, ": entries \"", *slot, "\" and \"", token, "\" share id ", id);
      slot = &token;
      if (token.empty()) fail(vocab_source_, ": entry with id ", id, " is the empty string (no token can be empty)");
    }
    vocab_size_ = j.size();
    symbols_.reserve(vocab_size_ + 64);
    for (std::size_t id = 0; id < vocab_size_; ++id) {
      symbols_.push_back(*by_id[id]);
      symbol_ids_.emplace(*by_id[id], static_cast<int>(id));
    }
  }

  void load_merges(const std::filesystem::path& path) {
    const std::string source = path.string();
    const std::string data = detail::read_text_file(path, "merges file");
    std::size_t start = 0;
    std::size_t line_no = 0;
    int rank = 0;
    while (start < data.size()) {
      std::size_t end = data.find('\n', start);
      if (end == std::string::npos) end = data.size();
      std::string line = data.substr(start, end - start);
      start = end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line_no == 1 && line.rfind("#version", 0) == 0) continue;
      const std::size_t space = line.find(' ');
      if (line.empty() || space == std::string::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos)
        fail(source, ":", line_no, ": expected two symbols separated by one space, got '", line, "'");
      const std::string left = line.substr(0, space), right = line.substr(space + 1);
      for (const std::string* part : {&left, &right}) {
        std::u32string cps;
        try {
          cps = unicode::decode_utf8(*part);
        } catch (const error& e) {
          fail(source, ":", line_no, ": ", e.what());
        }
        for (char32_t c : cps) {
          if (!unicode_to_byte_.count(c))
            fail(source, ":", line_no, ": '", *part, "' is not a byte-level symbol (U+", std::hex, std::uppercase,
                 static_cast<std::uint32_t>(c), " is not in GPT-2's byte alphabet)");
        }
      }
      const int a = symbol_id(left), b = symbol_id(right), merged = symbol_id(left + right);
      merges_.insert_or_assign(pair_key(a, b), Merge{rank++, merged});  // a repeated pair: last rank wins (HF)
    }
    require(rank > 0, source, ": no merges");
  }

  bool matches_end_of_text(const std::vector<unicode::TextChar>& chars, std::size_t i) const {
    if (i + end_of_text.size() > chars.size()) return false;
    for (std::size_t k = 0; k < end_of_text.size(); ++k)
      if (chars[i + k].cp != static_cast<char32_t>(end_of_text[k])) return false;
    return true;
  }

  /// End of the regex match starting at chars[i] (every position matches; no match is empty).
  static std::size_t match_chunk(std::span<const unicode::TextChar> cs, std::size_t i) {
    const std::size_t n = cs.size();
    const char32_t c = cs[i].cp;
    if (c == U'\'' && i + 1 < n) {  // 's 't 're 've 'm 'll 'd
      const char32_t c1 = cs[i + 1].cp;
      if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') return i + 2;
      if (i + 2 < n) {
        const char32_t c2 = cs[i + 2].cp;
        if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l')) return i + 3;
      }
    }
    const std::size_t k = c == U' ' ? i + 1 : i;  // the optional leading space of the next three
    if (k < n) {
      constexpr auto letter = unicode::regex_letter, number = unicode::regex_number, space = unicode::regex_space;
      const std::uint16_t f = unicode::flags(cs[k].cp);
      if (f & letter) {  // ` ?\p{L}+`
        std::size_t e = k + 1;
        while (e < n && (unicode::flags(cs[e].cp) & letter)) ++e;
        return e;
      }
      if (f & number) {  // ` ?\p{N}+`
        std::size_t e = k + 1;
        while (e < n && (unicode::flags(cs[e].cp) & number)) ++e;
        return e;
      }
      if (!(f & space)) {  // ` ?[^\s\p{L}\p{N}]+`
        std::size_t e = k + 1;
        while (e < n && !(unicode::flags(cs[e].cp) & (letter | number | space))) ++e;
        return e;
      }
    }
    // c is whitespace: `\s+(?!\S)` keeps the run's last space for the next word unless it ends the text;
    // a single space before a non-space falls through to `\s+`.
    std::size_t e = i + 1;
    while (e < n && unicode::is_regex_space(cs[e].cp)) ++e;
    if (e == n) return n;
    return e - i >= 2 ? e - 1 : e;
  }

  /// BPE of one chunk's bytes into symbol ids (cached).
  void merge_bytes(std::string_view bytes, std::vector<int>& syms) const {
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      const auto it = cache_->map.find(bytes);
      if (it != cache_->map.end()) {
        syms = it->second;
        return;
      }
    }
    syms.clear();
    for (unsigned char b : bytes) syms.push_back(byte_symbol_[b]);
    if (syms.size() > short_chunk_bytes) merge_long(syms);
    else merge_short(syms);
    if (bytes.size() > max_cached_chunk_bytes) return;  // long chunks are rare; caching them could hold gigabytes
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (cache_->map.size() >= max_cache_entries) cache_->map.clear();
    cache_->map.emplace(std::string(bytes), syms);
  }

  // Lowest rank first, every occurrence left to right, then again: the reference algorithm, quadratic in
  // the chunk length (each pass scans all pairs), and the fastest for the short chunks of real text.
  void merge_short(std::vector<int>& syms) const {
    while (syms.size() > 1) {
      int best_rank = INT_MAX;
      const Merge* best = nullptr;
      std::size_t best_i = 0;
      for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
        const auto it = merges_.find(pair_key(syms[i], syms[i + 1]));
        if (it != merges_.end() && it->second.rank < best_rank) {
          best_rank = it->second.rank;
          best = &it->second;
          best_i = i;
        }
      }
      if (best == nullptr) break;
      const int a = syms[best_i], b = syms[best_i + 1];
      std::size_t w = 0;
      for (std::size_t i = 0; i < syms.size();) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          syms[w++] = best->merged;
          i += 2;
        } else {
          syms[w++] = syms[i++];
        }
      }
      syms.resize(w);
    }
  }

  // The same result in O(n log n), for long chunks (a 1 MB word took minutes with merge_short): candidate
  // pairs sit in a heap ordered by (rank, position) over a linked list of symbols. All occurrences of the
  // lowest rank are taken off together and merged left to right, and only then are the pairs they form
  // pushed, exactly as one pass of merge_short. (A merged symbol ab never equals a or b, so no pair formed
  // during a pass can belong to that pass.)
  void merge_long(std::vector<int>& syms) const {
    if (syms.size() < 2) return;  // nothing to merge (and the list walk below starts at symbol 0)
    const std::size_t n = syms.size(), none = static_cast<std::size_t>(-1);
    std::vector<std::size_t> next(n), prev(n);
    std::vector<char> alive(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
      next[i] = i + 1 < n ? i + 1 : none;
      prev[i] = i > 0 ? i - 1 : none;
    }
    auto merge_at = [&](std::size_t i) -> const Merge* {  // the merge of the pair starting at symbol i
      if (next[i] == none) return nullptr;
      const auto it = merges_.find(pair_key(syms[i], syms[next[i]]));
      return it == merges_.end() ? nullptr : &it->second;
    };
    using Candidate = std::pair<int, std::size_t>;  // (rank, position)
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (const Merge* m = merge_at(i)) heap.push({m->rank, i});
    std::vector<std::size_t> pass, merged;
    while (!heap.empty()) {
      const int rank = heap.top().first;
      pass.clear();
      for (; !heap.empty() && heap.top().first == rank; heap.pop()) pass.push_back(heap.top().second);
      merged.clear();
      for (std::size_t i : pass) {  // ascending positions
        if (!alive[i]) continue;
        const Merge* m = merge_at(i);
        if (m == nullptr || m->rank != rank) continue;  // stale: the pair changed since it was pushed
        const std::size_t j = next[i];
        syms[i] = m->merged;
        alive[j] = 0;
        next[i] = next[j];
        if (next[j] != none) prev[next[j]] = i;
        merged.push_back(i);
      }
      for (std::size_t i : merged) {
        if (prev[i] != none)
          if (const Merge* m = merge_at(prev[i])) heap.push({m->rank, prev[i]});
        if (const Merge* m = merge_at(i)) heap.push({m->rank, i});
      }
    }
    std::size_t w = 0;
    for (std::size_t i = 0; i != none; i = next[i]) syms[w++] = syms[i];
    syms.resize(w);
  }

  /// Pre-tokenizes one segment (no <|endoftext|> inside) and appends the BPE tokens of every chunk.
  void chunk_and_merge(std::string_view text, std::span<const unicode::TextChar> cs, int& word,
                       std::vector<int>& syms, std::string& scratch, std::vector<TokenPiece>& out) const {
    for (std::size_t i = 0; i < cs.size();) {
      const std::size_t j = match_chunk(cs, i);
      // Only the prefix space (add_prefix_space) has an empty span; its chunk is rebuilt with it.
      const bool inserted = cs[i].begin == cs[i].end;
      const std::size_t first_real = inserted ? i + 1 : i;
      const std::size_t origin = first_real < j ? cs[first_real].begin : cs[i].begin;
      const std::size_t real_end = first_real < j ? cs[j - 1].end : origin;
      std::string_view bytes = text.substr(origin, real_end - origin);
      if (inserted) {
        scratch.clear();
        scratch.push_back(' ');
        scratch.append(bytes);
        bytes = scratch;
      }
      merge_bytes(bytes, syms);
      std::size_t pos = 0;  // byte position within `bytes`
      for (int s : syms) {
        const std::size_t len = symbol_bytes_[static_cast<std::size_t>(s)];
        auto to_text = [&](std::size_t p) { return inserted ? origin + (p == 0 ? 0 : p - 1) : origin + p; };
        const int id = s < static_cast<int>(vocab_size_) ? s : eos_id_;
        out.push_back({id, symbols_[static_cast<std::size_t>(s)], Span{to_text(pos), to_text(pos + len)}, word});
        pos += len;
      }
      ++word;
      i = j;
    }
  }


  std::string vocab_source_;
  std::size_t vocab_size_ = 0;
  std::vector<std::string> symbols_;  ///< [vocab_size_ vocab entries, then merge symbols not in the vocab]
  std::vector<std::size_t> symbol_bytes_;  ///< input bytes each symbol stands for
  detail::StringMap<int> symbol_ids_;
  std::unordered_map<char32_t, unsigned char> unicode_to_byte_;
  std::array<int, 256> byte_symbol_{};
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::unique_ptr<Cache> cache_;
  int eos_id_ = 0;
};

}  // namespace darkbert
