#pragma once
/// @file
/// A terminal progress bar with rate and ETA, for long loops (sweeps, training, scans):
///
/// @code
/// darkbert::Progress progress("sweep", total_steps);
/// for (...) { work(); progress.advance(); }
/// progress.finish();
/// @endcode
///
/// A note after the numbers carries what the loop knows (progress.set_note("loss 0.412  305 ex/s")).
///
/// It redraws at most every 100 ms on stderr, only when stderr is a terminal unless forced; otherwise it
/// prints a plain line at 10% steps so logs stay readable.

#include <unistd.h>  // isatty

#include <chrono>   // std::chrono::steady_clock
#include <cstdio>   // std::fprintf
#include <string>   // std::string
#include <utility>  // std::move

namespace darkbert {

/// Progress bar of one loop; finishes itself when destroyed (see the example at the top of this header).
class Progress {
 public:
  /// The clock of rates and ETAs.
  using Clock = std::chrono::steady_clock;

  /// A bar named `label` for `total` steps; `enabled = false` draws nothing.
  Progress(std::string label, long total, bool enabled = true)
      : label_(std::move(label)), total_(total), enabled_(enabled), tty_(::isatty(2) != 0), start_(Clock::now()),
        last_draw_(start_) {}

  // One bar per loop: assigning a new bar would finish (print) the old one's copy at 0 steps.
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// A new estimate of the loop's length (a time budget refitted from the speed so far); the steps done,
  /// the rate and the clock go on.
  void set_total(long total) {
    total_ = total;
    last_decile_ = total_ > 0 ? done_ * 10 / total_ : 0;
  }

  /// Counts `steps` more steps done and redraws when due.
  void advance(long steps = 1) {
    done_ += steps;
    if (!enabled_) return;
    const auto now = Clock::now();
    if (tty_) {
      if (now - last_draw_ >= std::chrono::milliseconds(100) || done_ >= total_) draw(now, false);
    } else if (total_ > 0 && done_ * 10 / total_ > last_decile_) {
      last_decile_ = done_ * 10 / total_;
      draw(now, true);
    }
  }

  /// Text shown after the counters on the next redraw (the running loss, a rate in the loop's own units).
  void set_note(std::string note) { note_ = std::move(note); }

  /// Draws the final state and ends the line (called by the destructor if not before).
  void finish() {
    if (!enabled_ || finished_) return;
    finished_ = true;
    draw(Clock::now(), !tty_);
    if (tty_) std::fprintf(stderr, "\n");
  }
  ~Progress() { finish(); }

  /// Seconds since construction.
  double elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// Steps counted so far.
  long done() const { return done_; }

 private:
  void draw(Clock::time_point now, bool newline) {
    last_draw_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
    const double eta = rate > 0 && total_ > done_ ? static_cast<double>(total_ - done_) / rate : 0.0;
    const double fraction = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
    constexpr int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "%s%s [%s] %ld/%ld %5.1f%%  %.2f/s  elapsed %s  eta %s%s%s%s%s",
                 tty_ && !newline ? "\r" : "", label_.c_str(), bar.c_str(), done_, total_, 100.0 * fraction, rate,
                 clock(seconds).c_str(), clock(eta).c_str(), note_.empty() ? "" : "  ", note_.c_str(),
                 tty_ ? "\033[K" : "", newline ? "\n" : "");  // erase the rest of a longer old line
    std::fflush(stderr);
  }
  static std::string clock(double seconds) {
    const long s = static_cast<long>(seconds + 0.5);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    return buffer;
  }

  std::string label_, note_;
  long total_;
  long done_ = 0;
  long last_decile_ = 0;
  bool enabled_, tty_, finished_ = false;
  Clock::time_point start_, last_draw_;
};

}  // namespace darkbert
