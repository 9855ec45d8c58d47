#include "lantern/steady_state.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace lantern {

namespace {
double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    const double hi = v[v.size() / 2];
    if (v.size() % 2 == 1) return hi;
    return (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2))) / 2;
}
}  // namespace

SteadyState steady_state(std::span<const double> lat, size_t window, double max_variation, double quiet_ms) {
    SteadyState s;
    s.tokens = lat.size();
    s.transient_tokens = lat.size();
    if (lat.empty()) return s;
    const size_t burst_n = std::min<size_t>(16, lat.size());
    const double burst_ms =
        std::accumulate(lat.begin(), lat.begin() + static_cast<std::ptrdiff_t>(burst_n), 0.0);
    s.burst_tok_s = burst_ms > 0 ? 1e3 * static_cast<double>(burst_n) / burst_ms : 0;
    // The first window whose variation is below the threshold (or whose spread is within the
    // host's timing noise), by running sums (a long reply is scanned once, not once per window).
    const size_t W = std::max<size_t>(window, 2);
    if (lat.size() >= W) {
        double sum = 0, sq = 0;
        for (size_t i = 0; i < W; ++i) sum += lat[i], sq += lat[i] * lat[i];
        for (size_t i = 0;; ++i) {
            const double mean = sum / static_cast<double>(W);
            const double var = std::max(0.0, (sq - sum * mean) / static_cast<double>(W - 1));
            const double spread = std::sqrt(var);
            if (mean > 0 && (spread / mean < max_variation || spread < quiet_ms)) {
                s.reached = true;
                s.transient_tokens = i;
                break;
            }
            if (i + W >= lat.size()) break;
            sum += lat[i + W] - lat[i];
            sq += lat[i + W] * lat[i + W] - lat[i] * lat[i];
        }
    }
    if (!s.reached) return s;
    const std::vector<double> steady(lat.begin() + static_cast<std::ptrdiff_t>(s.transient_tokens),
                                     lat.end());
    const double med = median_of(steady);
    s.steady_tok_s = med > 0 ? 1e3 / med : 0;
    if (steady.size() >= 8) {
        const double n = static_cast<double>(steady.size());
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < steady.size(); ++i) {
            const double x = static_cast<double>(i);
            sx += x, sy += steady[i], sxx += x * x, sxy += x * steady[i];
        }
        s.slope_ms_per_100 = (n * sxy - sx * sy) / (n * sxx - sx * sx) * 100;
        const auto q = static_cast<std::ptrdiff_t>(steady.size() / 4);
        const double first = median_of({steady.begin(), steady.begin() + q});
        const double last = median_of({steady.end() - q, steady.end()});
        s.slowdown = first > 0 ? last / first - 1 : 0;
    }
    return s;
}

}  // namespace lantern
