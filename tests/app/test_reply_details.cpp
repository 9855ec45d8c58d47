// The small print under a reply is stored as data and worded when shown (chat/ReplyDetails.h):
// the same stored details read in English or in Chinese, whichever language the app runs in, a
// continued or failed reply keeps its earlier parts, and details stored as plain text before this
// format still show as they were written.
#include <QLocale>
#include <QTest>
#include <QTranslator>

#include "Language.h"
#include "chat/ReplyDetails.h"

using reply_details::Ending;
using reply_details::Part;

class TestReplyDetails : public QObject {
    Q_OBJECT
private slots:
    void cleanup() {
        delete installed_;  // removes it, and Qt's own installed with it
        installed_ = nullptr;
        QLocale::setDefault(QLocale::c());
    }

    void aReplyIsStoredAsDataAndWordedInTheLanguageShown() {
        const QString stored = reply_details::append({}, reply());
        QVERIFY2(stored.startsWith(QLatin1Char('[')) && !stored.contains(QLatin1String("tokens ·")),
                 qPrintable(stored));

        inLanguage("en", QLocale(QLocale::English, QLocale::UnitedStates));
        QCOMPARE(reply_details::display(stored),
                 QStringLiteral("1,508 tokens · 2,266 tok/s · first token 2.93 ms · ended by full context"));

        // The same stored string after a restart in Chinese: Chinese words, and Chinese units.
        cleanup();
        inLanguage("zh_CN", QLocale(QLocale::Chinese, QLocale::China));
        QCOMPARE(reply_details::display(stored),
                 QStringLiteral("1,508 个词元 · 2,266 词元/秒 · 首词元 2.93 毫秒 · 结束原因：上下文已满"));
    }

    // A reply written in steps shared with API replies says how many of its tokens were (why its
    // rate is lower than the model's), in either language; one written alone says nothing of it.
    void tokensWrittenBesideApiRepliesAreSaid() {
        Part shared = reply();
        shared.besideApi = 1200;
        const QString stored = reply_details::append({}, shared);
        inLanguage("en", QLocale(QLocale::English, QLocale::UnitedStates));
        QCOMPARE(reply_details::display(stored),
                 QStringLiteral("1,508 tokens · 2,266 tok/s · first token 2.93 ms · ended by full context · "
                                "1,200 written beside API replies"));
        QVERIFY(!reply_details::display(reply_details::append({}, reply())).contains(QStringLiteral("API")));
        shared.besideApi = 1;
        QVERIFY2(reply_details::display(reply_details::append({}, shared))
                     .endsWith(QStringLiteral(" · 1 written beside API replies")),
                 qPrintable(reply_details::display(reply_details::append({}, shared))));
        cleanup();
        inLanguage("zh_CN", QLocale(QLocale::Chinese, QLocale::China));
        QCOMPARE(reply_details::display(stored),
                 QStringLiteral("1,508 个词元 · 2,266 词元/秒 · 首词元 2.93 毫秒 · 结束原因：上下文已满 · "
                                "1,200 个与 API 回复同步生成"));
    }

    // Continue adds a part (saying who continued when another model did); a failure or a lost
    // device after it keeps both. A rate of 0 (not measured) is left out rather than shown as 0.
    void laterPartsFollowTheFirst() {
        inLanguage("en", QLocale(QLocale::English, QLocale::UnitedStates));
        QString stored = reply_details::append({}, reply());
        Part more;
        more.tokens = 1;
        more.firstTokenMs = 12.5;
        more.stopReason = QStringLiteral("eos");
        more.continued = true;
        more.continuedBy = QStringLiteral("TinyLlama");
        stored = reply_details::append(stored, more);
        more.continuedBy.clear();
        stored = reply_details::append(stored, more);
        stored = reply_details::append(stored, {.ending = Ending::Failed});
        QCOMPARE(
            reply_details::display(stored),
            QStringLiteral("1,508 tokens · 2,266 tok/s · first token 2.93 ms · ended by full context · "
                           "continued by TinyLlama: 1 token · first token 12.5 ms · ended by end of text · "
                           "continued: 1 token · first token 12.5 ms · ended by end of text · failed"));
        QCOMPARE(reply_details::display(reply_details::append({}, {.ending = Ending::DeviceLost})),
                 QStringLiteral("the device was lost"));
        QCOMPARE(reply_details::display(reply_details::append({}, {.ending = Ending::AppClosed})),
                 QStringLiteral("the app was closed while generating"));
        QCOMPARE(reply_details::display({}), QString());
    }

    // Conversations saved before this format hold the words themselves: shown as written, and
    // a part added later goes after them.
    void plainTextFromBeforeIsShownAsWritten() {
        inLanguage("en", QLocale(QLocale::English, QLocale::UnitedStates));
        const QString old =
            QStringLiteral("508 tokens · 1,857 tok/s · first token 4.24 ms · ended by full context");
        QCOMPARE(reply_details::display(old), old);
        QCOMPARE(reply_details::display(reply_details::append(old, {.ending = Ending::Failed})),
                 old + QStringLiteral(" · failed"));
        QCOMPARE(reply_details::display(QStringLiteral("[not json")), QStringLiteral("[not json"));
    }

private:
    static Part reply() {
        Part p;
        p.tokens = 1508;
        p.tokensPerSecond = 2266.1;
        p.firstTokenMs = 2.93;
        p.stopReason = QStringLiteral("context_full");
        return p;
    }
    void inLanguage(const char* name, const QLocale& locale) {
        installed_ = language::install(QString::fromLatin1(name));
        QVERIFY2(installed_ != nullptr, name);
        QLocale::setDefault(locale);
    }

    QTranslator* installed_ = nullptr;
};

QTEST_MAIN(TestReplyDetails)
#include "test_reply_details.moc"
