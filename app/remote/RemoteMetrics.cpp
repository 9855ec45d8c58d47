#include "remote/RemoteMetrics.h"

#include <QByteArrayView>
#include <QHash>
#include <QStringList>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>
#include <utility>

namespace {

constexpr qsizetype kMaxInputBytes = 4 * 1024 * 1024;
constexpr qsizetype kMaxSamples = 100'000;

bool isBlank(char c) {
    return c == ' ' || c == '\t';
}
bool isLetterOrUnderscore(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

bool sameLetters(QByteArrayView a, const char* lowercase) {
    return a.compare(QByteArrayView(lowercase), Qt::CaseInsensitive) == 0;
}

// A value as Go's ParseFloat reads it (what the format asks for), hexadecimal floats aside:
// decimal with an optional sign and exponent, NaN, Inf / Infinity with an optional sign.
std::optional<double> readValue(QByteArrayView text) {
    const bool signed_ = !text.isEmpty() && (text.front() == '+' || text.front() == '-');
    const bool negative = signed_ && text.front() == '-';
    if (signed_) text = text.sliced(1);
    if (text.isEmpty()) return std::nullopt;
    if (!signed_ && sameLetters(text, "nan")) return std::nan("");
    if (sameLetters(text, "inf") || sameLetters(text, "infinity")) return negative ? -INFINITY : INFINITY;
    if (!isDigit(text.front()) && text.front() != '.') return std::nullopt;
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return negative ? -value : value;
}

// A timestamp: milliseconds as a 64-bit integer, with an optional sign.
bool isTimestamp(QByteArrayView text) {
    if (!text.isEmpty() && (text.front() == '+' || text.front() == '-')) text = text.sliced(1);
    if (text.isEmpty() || !std::all_of(text.begin(), text.end(), isDigit)) return false;
    int64_t ms = 0;
    return std::from_chars(text.data(), text.data() + text.size(), ms).ec == std::errc();  // not too long
}

// Reads one sample line; false when it is malformed.
class SampleLine {
public:
    explicit SampleLine(QByteArrayView line) : at_(line.data()), end_(line.data() + line.size()) {}

    bool read(PrometheusSample* sample) {
        skipBlanks();
        const QByteArrayView name = readName(true);
        if (name.isEmpty()) return false;
        sample->name = QString::fromLatin1(name);
        skipBlanks();
        if (at_ < end_ && *at_ == '{') {
            ++at_;
            if (!readLabels(&sample->labels)) return false;
            skipBlanks();
        } else if (at_ == end_ || !isBlank(at_[-1])) {
            return false;  // no value, or a name running into something that is no name
        }
        const std::optional<double> value = readValue(readToken());
        if (!value) return false;
        sample->value = *value;
        skipBlanks();
        if (at_ < end_ && !isTimestamp(readToken())) return false;
        skipBlanks();
        return at_ == end_;
    }

private:
    void skipBlanks() {
        while (at_ < end_ && isBlank(*at_)) ++at_;
    }
    QByteArrayView readToken() {
        const char* start = at_;
        while (at_ < end_ && !isBlank(*at_)) ++at_;
        return QByteArrayView(start, at_ - start);
    }
    // [a-zA-Z_:][a-zA-Z0-9_:]* for a metric, the same without ':' for a label; empty when none.
    QByteArrayView readName(bool colons) {
        const char* start = at_;
        const auto fits = [colons](char c, bool first) {
            return isLetterOrUnderscore(c) || (colons && c == ':') || (!first && isDigit(c));
        };
        while (at_ < end_ && fits(*at_, at_ == start)) ++at_;
        return QByteArrayView(start, at_ - start);
    }
    // `name="value"` pairs up to the closing brace; a trailing comma is allowed.
    bool readLabels(QMap<QString, QString>* labels) {
        for (;;) {
            skipBlanks();
            if (at_ < end_ && *at_ == '}') {
                ++at_;
                return true;
            }
            const QByteArrayView name = readName(false);
            if (name.isEmpty()) return false;
            skipBlanks();
            if (at_ == end_ || *at_ != '=') return false;
            ++at_;
            skipBlanks();
            QByteArray value;
            if (!readQuoted(&value)) return false;
            const QString key = QString::fromLatin1(name);
            if (labels->contains(key)) return false;  // the same label twice
            labels->insert(key, QString::fromUtf8(value));
            skipBlanks();
            if (at_ < end_ && *at_ == ',') {
                ++at_;
            } else if (at_ == end_ || *at_ != '}') {
                return false;
            }
        }
    }
    // A double-quoted label value with \\, \" and \n escapes (no other escape is allowed).
    bool readQuoted(QByteArray* out) {
        if (at_ == end_ || *at_ != '"') return false;
        for (++at_; at_ < end_; ++at_) {
            if (*at_ == '"') {
                ++at_;
                return true;
            }
            if (*at_ != '\\') {
                out->append(*at_);
                continue;
            }
            if (++at_ == end_) return false;
            switch (*at_) {
                case '\\':
                    out->append('\\');
                    break;
                case '"':
                    out->append('"');
                    break;
                case 'n':
                    out->append('\n');
                    break;
                default:
                    return false;
            }
        }
        return false;  // no closing quote
    }

    const char* at_;
    const char* end_;
};

// The samples of one metric name taken together (NaN and infinite samples left out).
struct Series {
    double sum = 0;
    int count = 0;
    std::optional<double> total() const { return count ? std::optional(sum) : std::nullopt; }
    std::optional<double> mean() const { return count ? std::optional(sum / count) : std::nullopt; }
};

// A fraction when it is one (0..1).
std::optional<double> fraction(std::optional<double> v) {
    return v && *v >= 0 && *v <= 1 ? v : std::nullopt;
}
std::optional<double> ratio(std::optional<double> part, std::optional<double> whole) {
    if (!part || !whole || *whole <= 0) return std::nullopt;
    return fraction(*part / *whole);
}

const QStringList& vllmNames() {
    static const QStringList names = {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_preemptions_total",
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_queries_total",
        "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_hit_rate",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:avg_prompt_throughput_toks_per_s",
        "vllm:avg_generation_throughput_toks_per_s",
    };
    return names;
}
const QStringList& llamaCppNames() {
    static const QStringList names = {
        "llamacpp:prompt_tokens_total",   "llamacpp:tokens_predicted_total",
        "llamacpp:prompt_tokens_seconds", "llamacpp:predicted_tokens_seconds",
        "llamacpp:kv_cache_usage_ratio",  "llamacpp:kv_cache_tokens",
        "llamacpp:requests_processing",   "llamacpp:requests_deferred",
    };
    return names;
}
const QStringList& lanternNames() {
    static const QStringList names = {
        "lantern_kv_blocks_total",        "lantern_kv_blocks_used",
        "lantern_kv_blocks_cached",       "lantern_replies_in_progress",
        "lantern_replies_waiting",        "lantern_replies_preempted_total",
        "lantern_prompt_tokens_total",    "lantern_prompt_tokens_cached_total",
        "lantern_generated_tokens_total",
    };
    return names;
}

// The series of `names` on the page, of the samples `use` accepts.
template <typename Use>
QHash<QString, Series> seriesOf(const QVector<PrometheusSample>& samples, const QStringList& names, Use use) {
    QHash<QString, Series> series;
    for (const PrometheusSample& s : samples) {
        if (!std::isfinite(s.value) || !names.contains(s.name) || !use(s)) continue;
        Series& one = series[s.name];
        one.sum += s.value;
        ++one.count;
    }
    return series;
}

RemoteMetrics fromVllm(const QVector<PrometheusSample>& samples, const QString& model) {
    const auto isVllm = [](const PrometheusSample& s) { return s.name.startsWith(QLatin1String("vllm:")); };
    bool modelOnPage = false;
    if (!model.isEmpty()) {
        for (const PrometheusSample& s : samples)
            if (isVllm(s) && s.labels.value(QStringLiteral("model_name")) == model) {
                modelOnPage = true;
                break;
            }
    }
    const QHash<QString, Series> v = seriesOf(samples, vllmNames(), [&](const PrometheusSample& s) {
        return !modelOnPage || s.labels.value(QStringLiteral("model_name")) == model;
    });
    const auto total = [&v](const char* name) { return v.value(QLatin1String(name)).total(); };
    const auto mean = [&v](const char* name) { return v.value(QLatin1String(name)).mean(); };

    RemoteMetrics m;
    m.source = RemoteMetrics::Source::Vllm;
    // V1 (0.9 on) says kv_cache_usage_perc; before, gpu_cache_usage_perc (a fraction too).
    m.kvUsage = fraction(mean("vllm:kv_cache_usage_perc"));
    if (!m.kvUsage) m.kvUsage = fraction(mean("vllm:gpu_cache_usage_perc"));
    // V1 counts queried and hit tokens (before 0.9 as gpu_prefix_cache_*); V0 had a hit-rate gauge.
    m.prefixHitRate = ratio(total("vllm:prefix_cache_hits_total"), total("vllm:prefix_cache_queries_total"));
    if (!m.prefixHitRate)
        m.prefixHitRate =
            ratio(total("vllm:gpu_prefix_cache_hits_total"), total("vllm:gpu_prefix_cache_queries_total"));
    if (!m.prefixHitRate) m.prefixHitRate = fraction(mean("vllm:gpu_prefix_cache_hit_rate"));
    m.running = total("vllm:num_requests_running");
    m.waiting = total("vllm:num_requests_waiting");
    m.preemptions = total("vllm:num_preemptions_total");
    m.promptTokensTotal = total("vllm:prompt_tokens_total");
    m.generatedTokensTotal = total("vllm:generation_tokens_total");
    // V0's deprecated gauges, since removed (vLLM PR #12383).
    m.promptTokensPerSecond = total("vllm:avg_prompt_throughput_toks_per_s");
    m.generatedTokensPerSecond = total("vllm:avg_generation_throughput_toks_per_s");
    return m;
}

RemoteMetrics fromLlamaCpp(const QVector<PrometheusSample>& samples) {
    const QHash<QString, Series> v =
        seriesOf(samples, llamaCppNames(), [](const PrometheusSample&) { return true; });
    const auto total = [&v](const char* name) { return v.value(QLatin1String(name)).total(); };

    RemoteMetrics m;
    m.source = RemoteMetrics::Source::LlamaCpp;
    m.kvUsage = fraction(total("llamacpp:kv_cache_usage_ratio"));  // removed in llama.cpp PR #13660
    m.kvTokens = total("llamacpp:kv_cache_tokens");                // likewise
    m.running = total("llamacpp:requests_processing");
    m.waiting = total("llamacpp:requests_deferred");
    m.promptTokensTotal = total("llamacpp:prompt_tokens_total");
    m.generatedTokensTotal = total("llamacpp:tokens_predicted_total");
    m.promptTokensPerSecond = total("llamacpp:prompt_tokens_seconds");
    m.generatedTokensPerSecond = total("llamacpp:predicted_tokens_seconds");
    return m;
}

RemoteMetrics fromLantern(const QVector<PrometheusSample>& samples) {
    const QHash<QString, Series> v =
        seriesOf(samples, lanternNames(), [](const PrometheusSample&) { return true; });
    const auto total = [&v](const char* name) { return v.value(QLatin1String(name)).total(); };

    RemoteMetrics m;
    m.source = RemoteMetrics::Source::Lantern;
    m.kvBlocksTotal = total("lantern_kv_blocks_total");
    m.kvBlocksUsed = total("lantern_kv_blocks_used");
    m.kvBlocksCached = total("lantern_kv_blocks_cached");
    m.kvUsage = ratio(m.kvBlocksUsed, m.kvBlocksTotal);
    // replies_in_progress counts the waiting replies too.
    m.waiting = total("lantern_replies_waiting");
    if (const auto inProgress = total("lantern_replies_in_progress"); inProgress && m.waiting)
        m.running = std::max(0.0, *inProgress - *m.waiting);
    m.preemptions = total("lantern_replies_preempted_total");
    m.promptTokensTotal = total("lantern_prompt_tokens_total");
    m.generatedTokensTotal = total("lantern_generated_tokens_total");
    m.prefixHitRate = ratio(total("lantern_prompt_tokens_cached_total"), m.promptTokensTotal);
    return m;
}

bool hasAny(const QVector<PrometheusSample>& samples, const QStringList& names) {
    for (const PrometheusSample& s : samples)
        if (names.contains(s.name)) return true;
    return false;
}

}  // namespace

QVector<PrometheusSample> parsePrometheusText(const QByteArray& text, int* badLines) {
    int bad = 0;
    QVector<PrometheusSample> samples;
    QByteArrayView page(text);
    if (page.size() > kMaxInputBytes) {
        page = page.first(kMaxInputBytes);
        // A line cut at the limit is not read.
        page = page.first(page.lastIndexOf('\n') + 1);
    }
    qsizetype start = 0;
    while (start < page.size() && samples.size() < kMaxSamples) {
        qsizetype end = page.indexOf('\n', start);
        if (end < 0) end = page.size();
        QByteArrayView line = page.sliced(start, end - start);
        start = end + 1;
        if (line.endsWith('\r')) line.chop(1);
        qsizetype first = 0;
        while (first < line.size() && isBlank(line[first])) ++first;
        if (first == line.size() || line[first] == '#') continue;  // blank line or comment
        PrometheusSample sample;
        if (SampleLine(line).read(&sample)) {
            samples.append(std::move(sample));
        } else {
            ++bad;
        }
    }
    if (badLines) *badLines = bad;
    return samples;
}

bool RemoteMetrics::empty() const {
    return !kvUsage && !prefixHitRate && !running && !waiting && !preemptions && !kvBlocksTotal &&
           !kvBlocksUsed && !kvBlocksCached && !kvTokens && !promptTokensTotal && !generatedTokensTotal &&
           !promptTokensPerSecond && !generatedTokensPerSecond;
}

RemoteMetrics remoteMetricsFrom(const QVector<PrometheusSample>& samples, const QString& model) {
    // The three servers' names do not overlap (prefixes vllm:, llamacpp:, lantern_).
    if (hasAny(samples, lanternNames())) return fromLantern(samples);
    if (hasAny(samples, vllmNames())) return fromVllm(samples, model);
    if (hasAny(samples, llamaCppNames())) return fromLlamaCpp(samples);
    return {};
}
