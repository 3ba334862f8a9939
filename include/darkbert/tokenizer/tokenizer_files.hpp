#pragma once
/// @file
/// The files a Hugging Face folder keeps its tokenizer in, and copying them beside a saved model so that
/// the folder loads as a whole (Tokenizer::from_directory).
///
/// @code
/// model.save(out);
/// darkbert::copy_tokenizer_files(vocab_dir, out);
/// @endcode

#include <filesystem>  // std::filesystem

#include "../core/atomic_file.hpp"  // write_file_atomically
#include "detail/text_files.hpp"     // read_text_file

namespace darkbert {

/// Copies the tokenizer files found in `from` (WordPiece vocab.txt, GPT-2 vocab.json + merges.txt, and the
/// Hugging Face tokenizer configs) into the checkpoint folder `to`; returns how many were copied. Copying a
/// folder onto itself copies nothing.
inline int copy_tokenizer_files(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (std::filesystem::exists(to) && std::filesystem::equivalent(from, to)) return 0;
  int copied = 0;
  for (const char* name : {"vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"})
    if (std::filesystem::exists(from / name)) {
      // Through the crash-safe writer: a full disk is reported by name and no torn copy is left.
      write_file_atomically(to / name, detail::read_text_file(from / name, "tokenizer file"));
      ++copied;
    }
  return copied;
}

}  // namespace darkbert
