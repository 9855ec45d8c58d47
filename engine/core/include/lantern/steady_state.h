// lantern/steady_state.h — where a run of decode steps settles: the steady-state rate after the
// transient, and whether it slows down as it goes. lantern-bench --steady and the app's
// Performance panel both read their per-token latencies through it, so they report alike.
#pragma once
#include <cstddef>
#include <span>

namespace lantern {

struct SteadyState {
    size_t tokens = 0;  // latencies analysed
    // The transient ends at the first window of `window` tokens whose latencies vary by less than
    // the threshold (coefficient of variation: standard deviation / mean) or whose standard
    // deviation is under `quiet_ms` whatever its mean; reached = false when no window does (or the
    // run is shorter than one window), and transient_tokens is then `tokens`.
    bool reached = false;
    size_t transient_tokens = 0;
    double burst_tok_s = 0;   // over the first 16 tokens (or fewer, in a shorter run)
    double steady_tok_s = 0;  // 1000 / median latency after the transient; 0 when not reached
    // Over the steady part (at least 8 tokens, else 0): the least-squares slope of the latency in
    // ms per 100 tokens, and how much slower its last quarter is than its first (median latency
    // ratio - 1: +0.10 = 10 % slower). Attention reads more keys at every position, so a long
    // reply slows down even on a quiet machine.
    double slope_ms_per_100 = 0;
    double slowdown = 0;
};

// `latencies_ms`: one step's wall time per token, in order. Defaults: lantern-bench's, a window of
// 32 tokens and 5 % variation, or a spread under 0.05 ms. The absolute floor keeps a tiny model,
// whose sub-millisecond steps jitter by more than 5 % from thread wake-ups alone, from never
// settling (figures: docs/decisions/0018-measure-by-interleaved-pairs-and-rooflines.md).
// Any thread; no errors.
SteadyState steady_state(std::span<const double> latencies_ms, size_t window = 32,
                         double max_variation = 0.05, double quiet_ms = 0.05);

}  // namespace lantern
