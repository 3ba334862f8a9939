#pragma once
/// @file
/// Token annotations for the sec. 4.3 analysis: the annotator's word labels (UPOS, subject/object, negation)
/// projected onto the tokens of an encoded example, in the form analysis/token_annotation.hpp consumes.
/// Every piece of a word carries the word's labels (PieceRule::all_pieces, see projection.hpp).
///
/// @code
/// auto e = tokenizer.encode_pair(ex.text_a, ex.text_b);
/// std::vector<darkbert::TokenAnnotation> tokens = darkbert::annotate_example(annotator, e, ex.text_a, ex.text_b);
/// // tokens[i].upos == "NOUN", tokens[i].deprel == "obj", tokens[i].negation, tokens[i].is_special, ...
/// @endcode

#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "darkbert/analysis/token_annotation.hpp"
#include "darkbert/core/error.hpp"
#include "darkbert/data/annotator.hpp"
#include "darkbert/data/projection.hpp"
#include "darkbert/tokenizer/encoding.hpp"

namespace darkbert {

/// Copies the labels of annotated words of text a (sequence 0) and, for pairs, text b (sequence 1) onto
/// the valid tokens of `e`. deprel is "nsubj", "nsubj:pass", "obj" or "" (the analysis convention for none).
inline std::vector<TokenAnnotation> annotate_encoding(const Encoding& e, const std::vector<AnnotatedWord>& words_a,
                                                      const std::vector<AnnotatedWord>* words_b = nullptr) {
  auto out = annotations_from_encoding(e);
  auto apply = [&](const std::vector<AnnotatedWord>& words, int sequence) {
    std::vector<Span> spans;
    for (const auto& w : words) spans.push_back(w.span);
    const auto align = align_words_to_tokens(e, spans, sequence);
    for (std::size_t t = 0; t < out.size(); ++t) {
      const int w = align.word_of_token[t];
      if (w < 0) continue;
      const auto& word = words[static_cast<std::size_t>(w)];
      out[t].upos = word.upos;
      out[t].deprel = word.role == "_" ? std::string() : word.role;
      out[t].negation = word.negation;
    }
  };
  apply(words_a, 0);
  if (words_b != nullptr) apply(*words_b, 1);
  return out;
}

/// Annotates the text(s) of an example with `annotator` and projects the labels onto `e`, which must have
/// been encoded from the same text(s).
inline std::vector<TokenAnnotation> annotate_example(const Annotator& annotator, const Encoding& e,
                                                     std::string_view text_a,
                                                     std::optional<std::string_view> text_b = std::nullopt) {
  const auto a = annotator.annotate(text_a);
  if (!text_b) return annotate_encoding(e, a);
  const auto b = annotator.annotate(*text_b);
  return annotate_encoding(e, a, &b);
}

}  // namespace darkbert
