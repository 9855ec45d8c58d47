// SamplingPanel: every knob emits one settingsChanged carrying the complete, correct settings.
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "Preferences.h"
#include "panels/SamplingPanel.h"
#include "worker/EngineTypes.h"

namespace {

lantern::SamplingSettings lastEmitted(const QSignalSpy& spy) {
    return spy.last().at(0).value<lantern::SamplingSettings>();
}

template <typename T>
T* child(SamplingPanel& panel, const char* name) {
    T* w = panel.findChild<T*>(QString::fromLatin1(name));
    if (w == nullptr) qFatal("SamplingPanel has no %s named '%s'", T::staticMetaObject.className(), name);
    return w;
}

}  // namespace

class TestSamplingPanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { registerEngineMetaTypes(); }
    void startsWithTheEngineDefaults();
    void temperatureSpinBoxAndSliderEmitTheNewTemperature();
    void everyKnobEmitsItsField();
    void seedIsRandomUntilFixed();
    void keepAdoptsTheSeedTheLastReplyUsed();
    void stopStringsAreOnePerLineWithEscapes();
    void setSettingsShowsWithoutEmitting();
    void resetRestoresDefaults();
    void settingsSurviveAQSettingsRoundTrip();
};

void TestSamplingPanel::startsWithTheEngineDefaults() {
    SamplingPanel panel;
    QCOMPARE(panel.settings(), lantern::SamplingSettings{});
}

void TestSamplingPanel::temperatureSpinBoxAndSliderEmitTheNewTemperature() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    child<QDoubleSpinBox>(panel, "temperature")->setValue(1.25);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(lastEmitted(spy).temperature, 1.25f);
    QCOMPARE(child<QSlider>(panel, "temperatureSlider")->value(), 125);

    child<QSlider>(panel, "temperatureSlider")->setValue(30);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(lastEmitted(spy).temperature, 0.3f);
    QCOMPARE(child<QDoubleSpinBox>(panel, "temperature")->value(), 0.3);

    // Greedy is a temperature like any other.
    child<QDoubleSpinBox>(panel, "temperature")->setValue(0.0);
    QCOMPARE(lastEmitted(spy).temperature, 0.0f);
    // Everything else stays at its default.
    lantern::SamplingSettings expected;
    expected.temperature = 0.0f;
    QCOMPARE(lastEmitted(spy), expected);
}

void TestSamplingPanel::everyKnobEmitsItsField() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    child<QSpinBox>(panel, "topK")->setValue(7);
    QCOMPARE(lastEmitted(spy).top_k, 7);
    child<QDoubleSpinBox>(panel, "topP")->setValue(0.5);
    QCOMPARE(lastEmitted(spy).top_p, 0.5f);
    child<QDoubleSpinBox>(panel, "minP")->setValue(0.12);
    QCOMPARE(lastEmitted(spy).min_p, 0.12f);
    child<QDoubleSpinBox>(panel, "repeatPenalty")->setValue(1.3);
    QCOMPARE(lastEmitted(spy).repeat_penalty, 1.3f);
    child<QDoubleSpinBox>(panel, "presencePenalty")->setValue(-0.5);
    QCOMPARE(lastEmitted(spy).presence_penalty, -0.5f);
    child<QDoubleSpinBox>(panel, "frequencyPenalty")->setValue(0.7);
    QCOMPARE(lastEmitted(spy).frequency_penalty, 0.7f);
    child<QSpinBox>(panel, "penaltyWindow")->setValue(-1);
    QCOMPARE(lastEmitted(spy).penalty_last_n, -1);
    child<QSpinBox>(panel, "maxTokens")->setValue(33);
    QCOMPARE(lastEmitted(spy).max_new_tokens, 33);
    QCOMPARE(spy.count(), 8);

    // The last emission carries all the changes, not only the last one.
    const lantern::SamplingSettings s = lastEmitted(spy);
    QCOMPARE(s.top_k, 7);
    QCOMPARE(s.top_p, 0.5f);
    QCOMPARE(s.repeat_penalty, 1.3f);
    QCOMPARE(panel.settings(), s);
}

void TestSamplingPanel::seedIsRandomUntilFixed() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    QVERIFY(!panel.settings().seed.has_value());
    auto* fixed = child<QCheckBox>(panel, "fixedSeed");
    auto* seed = child<QLineEdit>(panel, "seed");
    QVERIFY(!seed->isEnabled());
    fixed->setChecked(true);
    QVERIFY(seed->isEnabled());
    seed->setText(QStringLiteral("18446744073709551615"));  // the largest uint64
    QCOMPARE(lastEmitted(spy).seed, std::optional<uint64_t>(18446744073709551615ULL));
    fixed->setChecked(false);
    QVERIFY(!lastEmitted(spy).seed.has_value());
}

void TestSamplingPanel::keepAdoptsTheSeedTheLastReplyUsed() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    auto* keep = child<QPushButton>(panel, "keepSeed");
    QVERIFY2(!keep->isEnabled(), "nothing to keep before a reply reported its seed");
    panel.setSeedUsed(4242);
    QCOMPARE(child<QLabel>(panel, "seedUsed")->text(), QStringLiteral("4242"));
    QCOMPARE(spy.count(), 0);
    keep->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(lastEmitted(spy).seed, std::optional<uint64_t>(4242));
    QVERIFY(child<QCheckBox>(panel, "fixedSeed")->isChecked());
}

void TestSamplingPanel::stopStringsAreOnePerLineWithEscapes() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    child<QPlainTextEdit>(panel, "stopStrings")
        ->setPlainText(QStringLiteral("###\n\\n\\nUser:\n\nback\\\\slash"));
    const std::vector<std::string> expected = {"###", "\n\nUser:", "back\\slash"};
    QCOMPARE(lastEmitted(spy).stop, expected);
    QCOMPARE(SamplingPanel::parseStopStrings(SamplingPanel::formatStopStrings(expected)), expected);
}

void TestSamplingPanel::setSettingsShowsWithoutEmitting() {
    SamplingPanel panel;
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    lantern::SamplingSettings s;
    s.temperature = 0.0f;
    s.top_k = 1;
    s.top_p = 0.9f;
    s.min_p = 0.0f;
    s.repeat_penalty = 1.1f;
    s.penalty_last_n = 128;
    s.seed = 99;
    s.max_new_tokens = 64;
    s.stop = {"\n"};
    panel.setSettings(s);
    QCOMPARE(spy.count(), 0);
    QCOMPARE(panel.settings(), s);
    QCOMPARE(child<QSlider>(panel, "temperatureSlider")->value(), 0);
}

void TestSamplingPanel::resetRestoresDefaults() {
    SamplingPanel panel;
    child<QSpinBox>(panel, "topK")->setValue(3);
    QSignalSpy spy(&panel, &SamplingPanel::settingsChanged);
    child<QPushButton>(panel, "resetDefaults")->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(lastEmitted(spy), lantern::SamplingSettings{});
}

void TestSamplingPanel::settingsSurviveAQSettingsRoundTrip() {
    QTemporaryDir dir;
    QSettings file(dir.filePath(QStringLiteral("prefs.ini")), QSettings::IniFormat);
    lantern::SamplingSettings s;
    s.temperature = 1.5f;
    s.top_k = 0;
    s.seed = 7;
    s.stop = {"END", "\n\n"};
    preferences::writeSamplingSettings(file, s);
    file.sync();
    QCOMPARE(preferences::readSamplingSettings(file), s);
    // Out-of-range values on disk fall back to the defaults instead of reaching the engine.
    file.setValue(QStringLiteral("sampling/topP"), 3.0);
    QCOMPARE(preferences::readSamplingSettings(file), lantern::SamplingSettings{});
}

QTEST_MAIN(TestSamplingPanel)
#include "test_sampling_panel.moc"
