// The Simplified Chinese translation is compiled in, loads, translates what the user sees, and
// leaves no message untranslated.
#include <QDialogButtonBox>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QTest>
#include <QTranslator>
#include <QXmlStreamReader>

#include "Language.h"
#include "panels/KvCachePanel.h"
#include "panels/SamplingPanel.h"

class TestTranslation : public QObject {
    Q_OBJECT
private slots:
    void cleanup();
    void chineseTranslationLoadsAndTranslatesKnownStrings();
    void widgetsBuiltAfterwardsShowChinese();
    void qtsOwnButtonsShowChineseToo();
    void everyMessageInTheTsFileIsTranslated();
    void englishHasItsPluralForms();

private:
    QTranslator* installed_ = nullptr;
};

void TestTranslation::cleanup() {
    // Each test starts untranslated.
    delete installed_;  // removes it, and Qt's own installed with it
    installed_ = nullptr;
}

void TestTranslation::chineseTranslationLoadsAndTranslatesKnownStrings() {
    installed_ = language::install(QStringLiteral("zh_CN"));
    QVERIFY2(installed_ != nullptr, "lantern_zh_CN.qm is embedded under :/i18n");
    QCOMPARE(QCoreApplication::translate("MessageComposer", "Send"), QStringLiteral("发送"));
    QCOMPARE(QCoreApplication::translate("MessageComposer", "Stop"), QStringLiteral("停止"));
    QCOMPARE(QCoreApplication::translate("Device", "CPU (software Vulkan)"),
             QStringLiteral("CPU（软件 Vulkan）"));
    QCOMPARE(QCoreApplication::translate("MessageFitLabel", "%Ln token(s)", nullptr, 3),
             QStringLiteral("3 个词元"));
}

void TestTranslation::widgetsBuiltAfterwardsShowChinese() {
    installed_ = language::install(QStringLiteral("zh_CN"));
    QVERIFY(installed_ != nullptr);
    SamplingPanel sampling;
    bool found = false;
    for (const QLabel* label : sampling.findChildren<QLabel*>())
        found = found || label->text() == QStringLiteral("随机性");
    QVERIFY2(found, "the SamplingPanel section 'Randomness' is shown as 随机性");
    QCOMPARE(sampling.findChild<QPushButton*>(QStringLiteral("resetDefaults"))->text(),
             QStringLiteral("恢复默认值"));

    KvCachePanel kv;
    bool used = false;
    for (const QLabel* label : kv.findChildren<QLabel*>())
        used = used || label->text() == QStringLiteral("已用");
    QVERIFY(used);
}

// What Qt draws itself — the standard buttons of every dialog (Lantern's Context Length dialog,
// the delete confirmation) — comes from Qt's own translation, installed with Lantern's.
void TestTranslation::qtsOwnButtonsShowChineseToo() {
    QDialogButtonBox english(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    QCOMPARE(english.button(QDialogButtonBox::Cancel)->text(), QStringLiteral("Cancel"));
    installed_ = language::install(QStringLiteral("zh_CN"));
    QVERIFY(installed_ != nullptr);
    QDialogButtonBox chinese(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::Yes);
    QCOMPARE(chinese.button(QDialogButtonBox::Cancel)->text(), QStringLiteral("取消"));
    QCOMPARE(chinese.button(QDialogButtonBox::Yes)->text().left(1), QStringLiteral("是"));
    // Removing Lantern's translation removes Qt's with it.
    delete installed_;
    installed_ = nullptr;
    QDialogButtonBox again(QDialogButtonBox::Cancel);
    QCOMPARE(again.button(QDialogButtonBox::Cancel)->text(), QStringLiteral("Cancel"));
}

void TestTranslation::everyMessageInTheTsFileIsTranslated() {
    const QString path = QFINDTESTDATA("../../translations/lantern_zh_CN.ts");
    QVERIFY2(!path.isEmpty(), "translations/lantern_zh_CN.ts is found from the test's source directory");
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&file);
    int messages = 0;
    QString source;
    QStringList missing;
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement) continue;
        if (xml.name() == QLatin1String("message")) {
            ++messages;
        } else if (xml.name() == QLatin1String("source")) {
            source = xml.readElementText();
        } else if (xml.name() == QLatin1String("translation")) {
            const bool unfinished =
                xml.attributes().value(QLatin1String("type")) == QLatin1String("unfinished");
            const QString text = xml.readElementText(QXmlStreamReader::IncludeChildElements);
            if (unfinished || text.trimmed().isEmpty()) missing << source;
        }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(messages > 100);
    QVERIFY2(missing.isEmpty(),
             qPrintable(QStringLiteral("untranslated: ") + missing.join(QStringLiteral(" | "))));
}

void TestTranslation::englishHasItsPluralForms() {
    installed_ = language::install(QStringLiteral("en"));
    QVERIFY2(installed_ != nullptr, "lantern_en.qm (plural forms) is embedded");
    QCOMPARE(QCoreApplication::translate("MessageFitLabel", "%Ln token(s)", nullptr, 1),
             QStringLiteral("1 token"));
    QCOMPARE(QCoreApplication::translate("MessageFitLabel", "%Ln token(s)", nullptr, 3),
             QStringLiteral("3 tokens"));
    // Counts are written the locale's way, as the other figures on the same line are.
    const QLocale before;
    QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));
    const QString big = QCoreApplication::translate("MessageFitLabel", "%Ln token(s)", nullptr, 1242);
    QLocale::setDefault(before);
    QCOMPARE(big, QStringLiteral("1,242 tokens"));
    QCOMPARE(QCoreApplication::translate("MessageComposer", "Send"), QStringLiteral("Send"));
}

QTEST_MAIN(TestTranslation)
#include "test_translation.moc"
