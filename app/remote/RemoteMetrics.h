// RemoteMetrics — what a remote server's Prometheus page (its /metrics) says about its KV cache,
// its queue and its token totals, for the KV cache panel. parsePrometheusText() reads the page;
// remoteMetricsFrom() picks out the metrics of vLLM, llama-server or lantern-server.
//
// Units: fractions 0..1 (KV usage, prefix-cache hit rate), plain counts (requests, tokens, blocks),
// tokens per second. What the page does not say stays unset, never 0.
// Thread: any (plain values and pure functions).
// Errors: nothing throws; a malformed line is skipped and counted, an unknown page gives
// Source::None.
#pragma once
#include <QByteArray>
#include <QMap>
#include <QString>
#include <QVector>
#include <optional>

// One line of a Prometheus page: `name{label="value",...} value [timestamp]` (the timestamp is
// read and dropped).
struct PrometheusSample {
    QString name;
    QMap<QString, QString> labels;
    double value = 0;
};

// Reads the Prometheus text exposition format 0.0.4: comments (# HELP, # TYPE and others) and
// blank lines skipped; label values with \" \\ \n escapes; an optional timestamp; values NaN,
// +Inf, -Inf; CRLF line ends. A malformed line is skipped and counted in *badLines (set to 0
// first). Bounded: at most the first 4 MiB of `text` (a line cut there is not read) and
// 100,000 samples are read.
QVector<PrometheusSample> parsePrometheusText(const QByteArray& text, int* badLines = nullptr);

struct RemoteMetrics {
    enum class Source { None, Vllm, LlamaCpp, Lantern };
    Source source = Source::None;   // whose metric names were found
    std::optional<double> kvUsage;  // fraction 0..1 of the KV cache in use
    // Fraction 0..1 of prompt tokens found in the prefix cache, since start.
    std::optional<double> prefixHitRate;
    std::optional<double> running;      // requests being generated
    std::optional<double> waiting;      // requests waiting (queued / deferred)
    std::optional<double> preemptions;  // total since start
    std::optional<double> kvBlocksTotal, kvBlocksUsed, kvBlocksCached;  // Lantern's paged blocks
    std::optional<double> kvTokens;                                 // tokens in the KV cache (llama-server)
    std::optional<double> promptTokensTotal, generatedTokensTotal;  // since start
    // Server-reported averages, when exposed (vLLM V0, llama-server).
    std::optional<double> promptTokensPerSecond, generatedTokensPerSecond;

    bool empty() const;  // nothing known
};

// Maps the samples of one page:
//  - vLLM (V0 and V1 names): with several models on the page, the samples whose model_name label
//    is `model` when there are any, else all of them; series of several models or engines are
//    summed (counts) or averaged (KV usage, V0's hit-rate gauge); the V1 hit rate is hits over
//    queries of the prefix-cache counters.
//  - llama-server (--metrics): current builds say no KV usage; builds before llama.cpp PR #13660
//    did (kv_cache_usage_ratio, kv_cache_tokens). Its token rates are its own averages.
//  - lantern-server: KV usage = used / total blocks, running = in progress − waiting, prefix hit
//    rate = cached / prompt tokens (unset while no prompt was read).
// Samples that are NaN or infinite count as unsaid, and a fraction outside 0..1 stays unset. A page
// of none of these servers gives Source::None.
RemoteMetrics remoteMetricsFrom(const QVector<PrometheusSample>& samples, const QString& model = {});
