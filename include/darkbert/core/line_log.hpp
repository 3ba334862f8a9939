#pragma once
/// @file
/// A log that several threads write to at once (two models pretraining side by side): each thread writes
/// to its own LineLog, which hands every finished line to the shared stream under one lock, so lines of
/// different threads never mix.
///
/// @code
/// std::mutex lines;
/// darkbert::LineLog log(&std::cerr, lines);   // one per thread
/// log << "step " << step << "\n";               // reaches std::cerr whole, at the newline
/// @endcode

#include <mutex>    // std::mutex, std::lock_guard
#include <ostream>  // std::ostream
#include <streambuf>  // std::streambuf
#include <string>   // std::string

namespace darkbert {

namespace detail {

// Keeps one thread's unfinished line and hands each whole line to the shared stream under the lock.
class LineBuffer : public std::streambuf {
 public:
  LineBuffer(std::ostream* target, std::mutex& lock) : target_(target), lock_(lock) {}
  bool pending() const { return !line_.empty(); }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    line_.push_back(traits_type::to_char_type(c));
    if (line_.back() == '\n') hand_over();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(traits_type::to_int_type(s[i]));
    return n;
  }

 private:
  void hand_over() {
    if (target_ != nullptr) {
      const std::lock_guard<std::mutex> guard(lock_);
      *target_ << line_ << std::flush;
    }
    line_.clear();
  }

  std::ostream* target_;
  std::mutex& lock_;
  std::string line_;
};

// The buffer as a base class listed before std::ostream, so it exists before the stream is given it.
struct LineBufferBase {
  LineBuffer line_buffer;
};

}  // namespace detail

/// One thread's stream into a shared log (see the top of this file). A null target discards. Only whole
/// lines are handed over (a flush waits for the newline); an unfinished last line is ended with one when
/// the LineLog is destroyed.
class LineLog : private detail::LineBufferBase, public std::ostream {
 public:
  /// Writes into `target` (may be null), taking `lock` (the one every writer of `target` shares) per line.
  LineLog(std::ostream* target, std::mutex& lock)
      : detail::LineBufferBase{detail::LineBuffer(target, lock)}, std::ostream(&line_buffer) {}
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;
  ~LineLog() override {
    if (line_buffer.pending()) line_buffer.sputc('\n');
  }
};

}  // namespace darkbert
