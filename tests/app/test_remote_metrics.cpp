// RemoteMetrics: the Prometheus text parser (escapes, timestamps, NaN/Inf, CRLF, bad lines, its
// bounds) and the mapping of vLLM (V0, V1), llama-server and lantern-server pages, read from the
// pages written in tests/data/metrics.
#include <QFile>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <optional>

#include "remote/RemoteMetrics.h"
#include "test_support.h"

namespace {

QByteArray page(const char* name) {
    QFile file(QString::fromStdString(lantern::test::source_path(std::string("tests/data/metrics/") + name)));
    if (!file.open(QIODevice::ReadOnly)) return {};
    return file.readAll();
}

// A fixture page's samples and its count of bad lines.
struct Parsed {
    QVector<PrometheusSample> samples;
    int bad = -1;
};
Parsed parsed(const char* name) {
    Parsed p;
    p.samples = parsePrometheusText(page(name), &p.bad);
    return p;
}

// "unset" or the number, for messages.
QByteArray said(std::optional<double> v) {
    return v ? QByteArray::number(*v, 'g', 10) : QByteArray("unset");
}

bool closeTo(std::optional<double> v, double expected) {
    return v && std::abs(*v - expected) <= 1e-9 * std::max(1.0, std::abs(expected));
}

}  // namespace

#define CHECK_VALUE(field, expected)     \
    QVERIFY2(closeTo(m.field, expected), \
             (QByteArray(#field " is ") + said(m.field) + ", expected " #expected).constData())
#define CHECK_UNSET(field) \
    QVERIFY2(!m.field, (QByteArray(#field " is ") + said(m.field) + ", expected unset").constData())

class TestRemoteMetrics : public QObject {
    Q_OBJECT
private slots:
    void vllmV1PageGivesKvUsagePrefixHitRateAndQueues() {
        const Parsed p = parsed("vllm_v1.prom");
        QCOMPARE(p.bad, 0);
        const RemoteMetrics m = remoteMetricsFrom(p.samples);
        QCOMPARE(m.source, RemoteMetrics::Source::Vllm);
        CHECK_VALUE(kvUsage, 0.4213);
        CHECK_VALUE(prefixHitRate, 0.6);  // 1.10592e+06 hits of 1.8432e+06 queried tokens
        CHECK_VALUE(running, 7);
        CHECK_VALUE(waiting, 3);
        CHECK_VALUE(preemptions, 12);
        CHECK_VALUE(promptTokensTotal, 2104832);  // written 2.104832e+06
        CHECK_VALUE(generatedTokensTotal, 483190);
        CHECK_UNSET(promptTokensPerSecond);
        CHECK_UNSET(generatedTokensPerSecond);
        CHECK_UNSET(kvBlocksTotal);
        CHECK_UNSET(kvTokens);
        QVERIFY(!m.empty());
    }

    void vllmV0PageGivesGpuCacheUsageAndTheHitRateGauge() {
        const Parsed p = parsed("vllm_v0.prom");
        QCOMPARE(p.bad, 0);
        const RemoteMetrics m = remoteMetricsFrom(p.samples);
        QCOMPARE(m.source, RemoteMetrics::Source::Vllm);
        CHECK_VALUE(kvUsage, 0.8725);
        CHECK_VALUE(prefixHitRate, 0.3571);
        CHECK_VALUE(running, 4);
        CHECK_VALUE(waiting, 1);
        CHECK_VALUE(preemptions, 5);
        CHECK_VALUE(promptTokensTotal, 734210);
        CHECK_VALUE(generatedTokensTotal, 162034);
        CHECK_UNSET(promptTokensPerSecond);
    }

    void vllmPrefersTheNewNamesAndReadsTheOldThroughputGauges() {
        const QByteArray text =
            "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"
            "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n"
            "vllm:prefix_cache_queries_total{model_name=\"m\"} 200\n"
            "vllm:prefix_cache_hits_total{model_name=\"m\"} 50\n"
            "vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 10\n"
            "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 9\n"
            "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.1\n"
            "vllm:avg_prompt_throughput_toks_per_s{model_name=\"m\"} 812.5\n"
            "vllm:avg_generation_throughput_toks_per_s{model_name=\"m\"} 63.25\n";
        RemoteMetrics m = remoteMetricsFrom(parsePrometheusText(text));
        CHECK_VALUE(kvUsage, 0.5);
        CHECK_VALUE(prefixHitRate, 0.25);
        CHECK_VALUE(promptTokensPerSecond, 812.5);
        CHECK_VALUE(generatedTokensPerSecond, 63.25);

        // vLLM 0.8 had only the gpu_ counters; no query yet gives no rate, not 0.
        m =
            remoteMetricsFrom(parsePrometheusText("vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 10\n"
                                                  "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 9\n"));
        CHECK_VALUE(prefixHitRate, 0.9);
        m =
            remoteMetricsFrom(parsePrometheusText("vllm:prefix_cache_queries_total{model_name=\"m\"} 0\n"
                                                  "vllm:prefix_cache_hits_total{model_name=\"m\"} 0\n"
                                                  "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} -1\n"));
        QCOMPARE(m.source, RemoteMetrics::Source::Vllm);
        CHECK_UNSET(prefixHitRate);
    }

    void twoVllmModelsAreChosenByModelNameOrSummed() {
        const QByteArray text =
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 7.0\n"
            "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 2.0\n"
            "vllm:num_requests_waiting{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 3.0\n"
            "vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 0.0\n"
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 0.4\n"
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 0.2\n"
            "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} "
            "1000\n"
            "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 3000\n"
            "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 500\n"
            "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 300\n"
            "vllm:prompt_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} 1500\n"
            "vllm:prompt_tokens_total{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B-Instruct\"} 3500\n";
        const QVector<PrometheusSample> samples = parsePrometheusText(text);

        RemoteMetrics m = remoteMetricsFrom(samples, QStringLiteral("Qwen/Qwen2.5-7B-Instruct"));
        CHECK_VALUE(running, 2);
        CHECK_VALUE(waiting, 0);
        CHECK_VALUE(kvUsage, 0.2);
        CHECK_VALUE(prefixHitRate, 0.1);
        CHECK_VALUE(promptTokensTotal, 3500);

        m = remoteMetricsFrom(samples, QStringLiteral("meta-llama/Llama-3.1-8B-Instruct"));
        CHECK_VALUE(running, 7);
        CHECK_VALUE(kvUsage, 0.4);
        CHECK_VALUE(prefixHitRate, 0.5);

        // No model, or one the page does not name: counts summed, KV usage averaged, the hit rate
        // of all queries.
        for (const QString& model : {QString(), QStringLiteral("some-alias")}) {
            m = remoteMetricsFrom(samples, model);
            CHECK_VALUE(running, 9);
            CHECK_VALUE(waiting, 3);
            CHECK_VALUE(kvUsage, 0.3);
            CHECK_VALUE(prefixHitRate, 0.2);
            CHECK_VALUE(promptTokensTotal, 5000);
        }
    }

    void llamaServerPageGivesThroughputAndQueuesButNoKvUsage() {
        const Parsed p = parsed("llama_server.prom");
        QCOMPARE(p.bad, 0);
        const RemoteMetrics m = remoteMetricsFrom(p.samples);
        QCOMPARE(m.source, RemoteMetrics::Source::LlamaCpp);
        CHECK_UNSET(kvUsage);  // unknown, not an empty cache
        CHECK_UNSET(kvTokens);
        CHECK_UNSET(prefixHitRate);
        CHECK_UNSET(preemptions);
        CHECK_VALUE(running, 2);
        CHECK_VALUE(waiting, 1);
        CHECK_VALUE(promptTokensTotal, 48213);
        CHECK_VALUE(generatedTokensTotal, 1048530);  // written 1.04853e+06
        CHECK_VALUE(promptTokensPerSecond, 1186.43);
        CHECK_VALUE(generatedTokensPerSecond, 41.3772);
    }

    void olderLlamaServerPageGivesKvUsageAndTokens() {
        const QByteArray text =
            "# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.\n"
            "# TYPE llamacpp:kv_cache_usage_ratio gauge\n"
            "llamacpp:kv_cache_usage_ratio 0.3125\n"
            "# HELP llamacpp:kv_cache_tokens KV-cache tokens.\n"
            "# TYPE llamacpp:kv_cache_tokens gauge\n"
            "llamacpp:kv_cache_tokens 1280\n"
            "# HELP llamacpp:requests_processing Number of request processing.\n"
            "# TYPE llamacpp:requests_processing gauge\n"
            "llamacpp:requests_processing 1\n";
        const RemoteMetrics m = remoteMetricsFrom(parsePrometheusText(text));
        QCOMPARE(m.source, RemoteMetrics::Source::LlamaCpp);
        CHECK_VALUE(kvUsage, 0.3125);
        CHECK_VALUE(kvTokens, 1280);
        CHECK_VALUE(running, 1);
        CHECK_UNSET(waiting);
    }

    void lanternServerPageGivesBlocksAndRunningApartFromWaiting() {
        const Parsed p = parsed("lantern_server.prom");
        QCOMPARE(p.bad, 0);
        const RemoteMetrics m = remoteMetricsFrom(p.samples);
        QCOMPARE(m.source, RemoteMetrics::Source::Lantern);
        CHECK_VALUE(kvBlocksTotal, 2048);
        CHECK_VALUE(kvBlocksUsed, 512);
        CHECK_VALUE(kvBlocksCached, 384);
        CHECK_VALUE(kvUsage, 0.25);
        CHECK_VALUE(running, 3);  // 5 in progress, 2 of them waiting
        CHECK_VALUE(waiting, 2);
        CHECK_VALUE(preemptions, 4);
        CHECK_VALUE(promptTokensTotal, 18432);
        CHECK_VALUE(generatedTokensTotal, 6150);
        CHECK_VALUE(prefixHitRate, 0.75);  // 13824 of 18432 prompt tokens cached
        CHECK_UNSET(kvTokens);
        CHECK_UNSET(promptTokensPerSecond);
    }

    void lanternServerBeforeAnyPromptHasNoPrefixHitRate() {
        const QByteArray text =
            "lantern_prompt_tokens_total 0\nlantern_prompt_tokens_cached_total 0\n"
            "lantern_replies_in_progress 0\nlantern_replies_waiting 0\n"
            "lantern_kv_blocks_total 128\nlantern_kv_blocks_used 0\nlantern_kv_blocks_cached 0\n";
        const RemoteMetrics m = remoteMetricsFrom(parsePrometheusText(text));
        QCOMPARE(m.source, RemoteMetrics::Source::Lantern);
        CHECK_UNSET(prefixHitRate);
        CHECK_VALUE(promptTokensTotal, 0);
        CHECK_VALUE(kvUsage, 0);
        CHECK_VALUE(running, 0);
    }

    void emptyOrUnknownPageGivesSourceNone() {
        int bad = -1;
        QVector<PrometheusSample> samples = parsePrometheusText({}, &bad);
        QCOMPARE(bad, 0);
        QVERIFY(samples.isEmpty());
        RemoteMetrics m = remoteMetricsFrom(samples);
        QCOMPARE(m.source, RemoteMetrics::Source::None);
        QVERIFY(m.empty());

        // Another program's page (here Prometheus' own process metrics) is not a server we know.
        samples = parsePrometheusText(
            "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\n"
            "process_open_fds 42\npython_info{implementation=\"CPython\",major=\"3\"} 1.0\n");
        QCOMPARE(samples.size(), 2);
        m = remoteMetricsFrom(samples);
        QCOMPARE(m.source, RemoteMetrics::Source::None);
        QVERIFY(m.empty());
        QVERIFY(RemoteMetrics().empty());
    }

    void parserReadsEscapedLabelValues() {
        int bad = -1;
        const QVector<PrometheusSample> samples = parsePrometheusText(
            "msg{path=\"C:\\\\models\\\\llama.gguf\",quote=\"say "
            "\\\"hi\\\"\",lines=\"one\\ntwo\",empty=\"\"} 1\n"
            "spaced { a = \"1\" , b=\"2\", } 2\n"
            "utf8{name=\"caf\xc3\xa9 \xe2\x80\x94 {},=\"} 3\n",
            &bad);
        QCOMPARE(bad, 0);
        QCOMPARE(samples.size(), 3);
        QCOMPARE(samples[0].name, QStringLiteral("msg"));
        QCOMPARE(samples[0].labels.value("path"), QStringLiteral("C:\\models\\llama.gguf"));
        QCOMPARE(samples[0].labels.value("quote"), QStringLiteral("say \"hi\""));
        QCOMPARE(samples[0].labels.value("lines"), QStringLiteral("one\ntwo"));
        QVERIFY(samples[0].labels.contains("empty"));
        QCOMPARE(samples[0].labels.value("empty"), QString());
        QCOMPARE(samples[1].labels.size(), 2);
        QCOMPARE(samples[1].labels.value("b"), QStringLiteral("2"));
        QCOMPARE(samples[1].value, 2.0);
        QCOMPARE(samples[2].labels.value("name"), QString::fromUtf8("caf\xc3\xa9 \xe2\x80\x94 {},="));
    }

    void parserSkipsTimestamps() {
        int bad = -1;
        const QVector<PrometheusSample> samples = parsePrometheusText(
            "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
            "http_requests_total{method=\"post\",code=\"400\"}    3   1395066363000  \n"
            "metric_without_timestamp_and_labels 12.47\n"
            "old_sample 5 -1395066363000\n",
            &bad);
        QCOMPARE(bad, 0);
        QCOMPARE(samples.size(), 4);
        QCOMPARE(samples[0].value, 1027.0);
        QCOMPARE(samples[1].value, 3.0);
        QCOMPARE(samples[1].labels.value("code"), QStringLiteral("400"));
        QCOMPARE(samples[2].name, QStringLiteral("metric_without_timestamp_and_labels"));
        QCOMPARE(samples[2].value, 12.47);
        QCOMPARE(samples[3].value, 5.0);
    }

    void parserReadsNanAndInfinities() {
        int bad = -1;
        const QVector<PrometheusSample> samples = parsePrometheusText(
            "a NaN\nb +Inf\nc -Inf\nd{le=\"+Inf\"} 1.5e+06\ne -0.25\nf 1e-3\ng .5\nh Inf\n", &bad);
        QCOMPARE(bad, 0);
        QCOMPARE(samples.size(), 8);
        QVERIFY(std::isnan(samples[0].value));
        QVERIFY(std::isinf(samples[1].value) && samples[1].value > 0);
        QVERIFY(std::isinf(samples[2].value) && samples[2].value < 0);
        QCOMPARE(samples[3].labels.value("le"), QStringLiteral("+Inf"));
        QCOMPARE(samples[3].value, 1.5e6);
        QCOMPARE(samples[4].value, -0.25);
        QCOMPARE(samples[5].value, 0.001);
        QCOMPARE(samples[6].value, 0.5);
        QVERIFY(std::isinf(samples[7].value) && samples[7].value > 0);

        // A NaN sample says nothing: it neither fills a field nor spoils a sum.
        const RemoteMetrics m =
            remoteMetricsFrom(parsePrometheusText("vllm:kv_cache_usage_perc{model_name=\"m\"} NaN\n"
                                                  "vllm:num_requests_running{engine=\"0\"} 2\n"
                                                  "vllm:num_requests_running{engine=\"1\"} NaN\n"));
        CHECK_UNSET(kvUsage);
        CHECK_VALUE(running, 2);
    }

    void parserToleratesCrlf() {
        QByteArray text = page("lantern_server.prom");
        int unixBad = -1;
        const QVector<PrometheusSample> unixSamples = parsePrometheusText(text, &unixBad);
        text.replace("\n", "\r\n");
        int bad = -1;
        const QVector<PrometheusSample> samples = parsePrometheusText(text, &bad);
        QCOMPARE(bad, 0);
        QCOMPARE(unixBad, 0);
        QCOMPARE(samples.size(), 22);
        QCOMPARE(samples.size(), unixSamples.size());
        for (int i = 0; i < samples.size(); ++i) {
            QCOMPARE(samples[i].name, unixSamples[i].name);
            QCOMPARE(samples[i].value, unixSamples[i].value);
        }
        QCOMPARE(parsePrometheusText("x{a=\"b\"} 7\r\ny 8 1700000000000\r\n").size(), 2);
    }

    void malformedLinesAreCountedNotFatal() {
        const QByteArray text =
            "good_one 1\n"
            "no_value\n"
            "no_value_after_labels{a=\"b\"}\n"
            "two_values 1 2 3\n"
            "bad_value abc\n"
            "bad_timestamp 1 12.5\n"
            "1starts_with_digit 1\n"
            "unclosed{a=\"b\" 1\n"
            "unquoted{a=b} 1\n"
            "bad_escape{a=\"\\t\"} 1\n"
            "duplicate{a=\"1\",a=\"2\"} 1\n"
            "bad-name 1\n"
            "hex 0x10\n"
            "signed_nan -NaN\n"
            "twice_signed_timestamp 1 +-5\n"
            "   \t  \n"
            "  # an indented comment\n"
            "# TYPE good_two counter\n"
            "good_two 2\n";
        int bad = -1;
        const QVector<PrometheusSample> samples = parsePrometheusText(text, &bad);
        QCOMPARE(bad, 14);
        QCOMPARE(samples.size(), 2);
        QCOMPARE(samples[0].name, QStringLiteral("good_one"));
        QCOMPARE(samples[1].name, QStringLiteral("good_two"));
        QCOMPARE(samples[1].value, 2.0);
        QCOMPARE(parsePrometheusText("last_line 4").size(), 1);  // the last line needs no newline
    }

    void parserReadsAtMost100000SamplesAnd4MiB() {
        QByteArray many;
        for (int i = 0; i < 100'010; ++i) many += "s " + QByteArray::number(i) + '\n';
        int bad = -1;
        QVector<PrometheusSample> samples = parsePrometheusText(many, &bad);
        QCOMPARE(samples.size(), 100'000);
        QCOMPARE(samples.back().value, 99'999.0);
        QCOMPARE(bad, 0);

        // 5 MiB of comments, then a sample: the sample is past what is read.
        QByteArray big(5 * 1024 * 1024, 'x');
        for (qsizetype i = 0; i < big.size(); i += 1024) big[i] = '#', big[i + 1023] = '\n';
        big += "after_the_limit 1\n";
        samples = parsePrometheusText(big, &bad);
        QVERIFY(samples.isEmpty());
        QCOMPARE(bad, 0);

        // A line cut by the limit is left unread rather than read short.
        QByteArray cut(4 * 1024 * 1024 - 20, '#');
        cut[cut.size() - 1] = '\n';
        cut += "cut_line 123456789012345678901234567890\n";
        samples = parsePrometheusText(cut, &bad);
        QVERIFY(samples.isEmpty());
        QCOMPARE(bad, 0);
    }
};

QTEST_GUILESS_MAIN(TestRemoteMetrics)
#include "test_remote_metrics.moc"
