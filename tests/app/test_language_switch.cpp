// View > Language switches the interface at once, with no restart: the window (menus, docks, the
// composer, the status bar) and a dialog left open speak the new language, the choice is
// remembered, and switching back and forth leaves one translation installed.
#include <QAction>
#include <QDialog>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "Language.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "panels/PanelDocks.h"
#include "panels/SamplingPanel.h"
#include "remote/RemoteEnginesDialog.h"
#include "test_support.h"

namespace {

QStringList menuTitles(const MainWindow& window) {
    QStringList titles;
    for (QAction* a : window.menuBar()->actions()) titles << a->text();
    return titles;
}

QString dockTitle(const MainWindow& window, const char* name) {
    const auto* dock = window.findChild<QDockWidget*>(QString::fromLatin1(name));
    return dock != nullptr ? dock->windowTitle() : QString();
}

QString buttonText(const QWidget& parent, const char* name) {
    const auto* button = parent.findChild<QPushButton*>(QString::fromLatin1(name));
    return button != nullptr ? button->text() : QString();
}

QString stateText(const MainWindow& window) {
    const auto* label = window.findChild<QLabel*>(QStringLiteral("stateLabel"));
    return label != nullptr ? label->text() : QString();
}

// The label texts of a widget's own section captions (the Sampling panel's "Randomness").
bool showsLabel(const QWidget& parent, const QString& text) {
    for (const QLabel* label : parent.findChildren<QLabel*>())
        if (label->text() == text) return true;
    return false;
}

}  // namespace

class TestLanguageSwitch : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void switchingTheLanguageChangesTheWindowAndAnOpenDialogAtOnce();
    void switchingBackAndForthLeavesOneTranslationInstalled();

private:
    static void choose(MainWindow& window, const char* actionName);
};

void TestLanguageSwitch::initTestCase() {
    // Keep the user's settings and models directory out of it (as test_main_window does).
    const QString failed = lantern::test::isolate_app_settings(QStringLiteral("LanternTest"));
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
    preferences::setLanguage(QStringLiteral("en"));
    language::use(QStringLiteral("en"));  // as main() does at start-up
}

// View > Language > <name>, as the user picks it.
void TestLanguageSwitch::choose(MainWindow& window, const char* actionName) {
    auto* action = window.findChild<QAction*>(QString::fromLatin1(actionName));
    QVERIFY2(action != nullptr, actionName);
    action->trigger();
    // Qt posts LanguageChange to each window; the window passes it to its children.
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
}

void TestLanguageSwitch::switchingTheLanguageChangesTheWindowAndAnOpenDialogAtOnce() {
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(menuTitles(window).contains(QStringLiteral("&File")));
    QCOMPARE(dockTitle(window, "kvCacheDock"), QStringLiteral("KV Cache"));
    QCOMPARE(dockTitle(window, "conversationsDock"), QStringLiteral("Conversations"));
    QCOMPARE(buttonText(window, "sendButton"), QStringLiteral("Send"));
    QCOMPARE(stateText(window), QStringLiteral("No model"));
    QVERIFY(showsLabel(*window.panels()->sampling(), QStringLiteral("Randomness")));

    // A non-modal dialog stays open through the switch.
    window.showRemoteEnginesDialog();
    auto* dialog = window.findChild<RemoteEnginesDialog*>();
    QVERIFY(dialog != nullptr && dialog->isVisible());
    QCOMPARE(dialog->windowTitle(), QStringLiteral("Remote Engines"));
    QCOMPARE(buttonText(*dialog, "remoteAdd"), QStringLiteral("Add"));
    QCOMPARE(buttonText(*dialog, "remoteTest"), QStringLiteral("Test Connection"));

    choose(window, "languageAction_zh_CN");
    QCOMPARE(preferences::language(), QStringLiteral("zh_CN"));  // remembered
    QVERIFY2(menuTitles(window).contains(QStringLiteral("文件(&F)")),
             qPrintable(menuTitles(window).join(',')));
    QVERIFY(menuTitles(window).contains(QStringLiteral("视图(&V)")));
    QCOMPARE(dockTitle(window, "kvCacheDock"), QStringLiteral("KV 缓存"));
    QCOMPARE(dockTitle(window, "conversationsDock"), QStringLiteral("对话"));
    QCOMPARE(buttonText(window, "sendButton"), QStringLiteral("发送"));
    QCOMPARE(stateText(window), QStringLiteral("无模型"));
    QVERIFY(showsLabel(*window.panels()->sampling(), QStringLiteral("随机性")));
    QVERIFY(dialog->isVisible());
    QCOMPARE(dialog->windowTitle(), QStringLiteral("远程引擎"));
    QCOMPARE(buttonText(*dialog, "remoteAdd"), QStringLiteral("添加"));
    QCOMPARE(buttonText(*dialog, "remoteTest"), QStringLiteral("测试连接"));
    // The menu's check mark follows the choice.
    QVERIFY(window.findChild<QAction*>(QStringLiteral("languageAction_zh_CN"))->isChecked());
    QVERIFY(!window.findChild<QAction*>(QStringLiteral("languageAction_en"))->isChecked());

    choose(window, "languageAction_en");
    QCOMPARE(preferences::language(), QStringLiteral("en"));
    QVERIFY(menuTitles(window).contains(QStringLiteral("&File")));
    QCOMPARE(dockTitle(window, "kvCacheDock"), QStringLiteral("KV Cache"));
    QCOMPARE(dockTitle(window, "conversationsDock"), QStringLiteral("Conversations"));
    QCOMPARE(buttonText(window, "sendButton"), QStringLiteral("Send"));
    QCOMPARE(stateText(window), QStringLiteral("No model"));
    QVERIFY(showsLabel(*window.panels()->sampling(), QStringLiteral("Randomness")));
    QCOMPARE(dialog->windowTitle(), QStringLiteral("Remote Engines"));
    QCOMPARE(buttonText(*dialog, "remoteAdd"), QStringLiteral("Add"));
    QVERIFY(window.findChild<QAction*>(QStringLiteral("languageAction_en"))->isChecked());
    dialog->close();
}

void TestLanguageSwitch::switchingBackAndForthLeavesOneTranslationInstalled() {
    // zh → en → zh → en: English again, so no Chinese translator was left behind.
    for (int i = 0; i < 3; ++i) {
        QVERIFY(language::use(QStringLiteral("zh_CN")));
        QCOMPARE(QCoreApplication::translate("MessageComposer", "Send"), QStringLiteral("发送"));
        QVERIFY(language::use(QStringLiteral("en")));
        QCOMPARE(QCoreApplication::translate("MessageComposer", "Send"), QStringLiteral("Send"));
    }
    // Widgets built now and switched at run time agree.
    SamplingPanel panel;
    QVERIFY(showsLabel(panel, QStringLiteral("Randomness")));
    QVERIFY(language::use(QStringLiteral("zh_CN")));
    QCoreApplication::processEvents();
    QVERIFY(showsLabel(panel, QStringLiteral("随机性")));
    QVERIFY(language::use(QStringLiteral("zh_CN")));  // the same again: still one translation
    QCoreApplication::processEvents();
    QVERIFY(showsLabel(panel, QStringLiteral("随机性")));
    QVERIFY(language::use(QStringLiteral("en")));
    QCoreApplication::processEvents();
    QVERIFY(showsLabel(panel, QStringLiteral("Randomness")));
    // Qt's own words went with Lantern's.
    QCOMPARE(QCoreApplication::translate("QPlatformTheme", "Cancel"), QStringLiteral("Cancel"));
}

QTEST_MAIN(TestLanguageSwitch)
#include "test_language_switch.moc"
