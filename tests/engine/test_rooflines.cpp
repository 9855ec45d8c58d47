// lantern-bench's rooflines (lantern/rooflines.h) measure something real on this device: every read
// pattern and every weight layout's arithmetic kernel streams data, the chains of dispatches take
// time, and on a CPU device the host core's clock is measured — with validation on, short probes.
// Every figure is checked for being there (positive, finite), never for being fast.
#include <QProcess>
#include <QTest>

#include <cmath>

#include "lantern/device.h"
#include "lantern/rooflines.h"
#include "test_support.h"

using namespace lantern;

class RooflinesTest : public QObject {
    Q_OBJECT
private slots:
    void everyProbeMeasuresTheDevice() {
        const Rooflines r = measure_rooflines("", 0.05, test::validated_options().on_validation_message);
        QVERIFY(!r.device.empty());
        double best = 0;
        for (int i = 0; i < Rooflines::kReadPatterns; ++i) {
            QVERIFY2(r.read_gb_per_s_by_pattern[i] > 0, Rooflines::kReadPatternNames[i]);
            best = std::max(best, r.read_gb_per_s_by_pattern[i]);
        }
        QCOMPARE(r.read_gb_per_s, best);  // the roofline is the best pattern
        for (int i = 0; i < Rooflines::kDotTypes; ++i) {
            QVERIFY2(r.dot_gb_per_s[i] > 0, Rooflines::kDotTypeNames[i]);
            QCOMPARE(r.dot_gb_per_s_of(static_cast<uint32_t>(Rooflines::kDotTypeNumbers[i])),
                     r.dot_gb_per_s[i]);
        }
        QCOMPARE(r.dot_gb_per_s_of(99), 0.0);  // a layout that is not measured
        QVERIFY2(r.fma_gflop_s > 0 && std::isfinite(r.fma_gflop_s),
                 qPrintable(QString::number(r.fma_gflop_s)));
        QVERIFY(r.submit_wait_us > 0);
        QVERIFY(r.dispatch_us > 0);
        bool cpu = false;
        for (const auto& d : list_devices()) cpu = cpu || (d.name == r.device && d.type == DeviceType::Cpu);
#if defined(__x86_64__)
        if (cpu) {
            // The probe ran and gave a figure: positive, finite, the lowest not above the highest.
            // How fast this core is, is not the test's business (CI machines differ).
            QVERIFY2(r.host_clock_ghz_min > 0 && std::isfinite(r.host_clock_ghz_max),
                     qPrintable(QString::number(r.host_clock_ghz_max)));
            QVERIFY(r.host_clock_ghz_min <= r.host_clock_ghz_max);
        }
#endif
        if (!cpu) QCOMPARE(r.host_clock_ghz_max, 0.0);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // lantern-bench reads its numbers whole: "x" or "12x" ends the run with exit status 2 and the
    // flag named (std::stoi aborted on the first and took the second as 12), before any model.
    void benchRefusesANumberThatIsNone() {
        for (const QStringList& args : {QStringList{"-p", "x"}, QStringList{"-p", "512,2k"},
                                        QStringList{"-n", "12x"}, QStringList{"-b", "1,two"},
                                        QStringList{"--steady-seconds", "soon"}, QStringList{"-r", "1.5"}}) {
            QProcess bench;
            bench.start(QStringLiteral(LANTERN_BENCH_PATH), args + QStringList{"--model", "none.gguf"});
            QVERIFY(bench.waitForFinished(30000));
            QCOMPARE(bench.exitStatus(), QProcess::NormalExit);
            QCOMPARE(bench.exitCode(), 2);
            const QString err = QString::fromUtf8(bench.readAllStandardError());
            QVERIFY2(err.startsWith(args[0] + QStringLiteral(" needs a")), qPrintable(err.left(200)));
        }
    }

    void hostClockProbeGivesAFigureWhereItCan() {
        const double ghz = host_clock_ghz();
#if defined(__x86_64__)
        QVERIFY2(ghz > 0 && std::isfinite(ghz), qPrintable(QString::number(ghz)));
#else
        QCOMPARE(ghz, 0.0);
#endif
    }
};

QTEST_APPLESS_MAIN(RooflinesTest)
#include "test_rooflines.moc"
