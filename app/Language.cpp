#include "Language.h"

#include <QCoreApplication>
#include <QLibraryInfo>
#include <QPointer>
#include <QTranslator>

namespace language {

QStringList available() {
    return {QStringLiteral("zh_CN")};
}

namespace {
QLocale localeFor(const QString& name) {
    QLocale locale = name.isEmpty() ? QLocale::system() : QLocale(name);
    if (locale.language() == QLocale::C) locale = QLocale(QLocale::English);  // LANG=C / POSIX
    return locale;
}
}  // namespace

QTranslator* installQtTranslation(const QString& name, QObject* parent) {
    auto* qt = new QTranslator(parent);
    if (!qt->load(localeFor(name), QStringLiteral("qtbase"), QStringLiteral("_"),
                  QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
        delete qt;
        return nullptr;
    }
    QCoreApplication::installTranslator(qt);
    return qt;
}

QTranslator* install(const QString& name) {
    const QLocale locale = localeFor(name);
    // English is the source language; its file only supplies plural forms.
    auto* translator = new QTranslator(QCoreApplication::instance());
    // Finds lantern_zh_CN.qm for zh_CN (also zh_Hans_CN and the UI languages of the locale).
    if (!translator->load(locale, QStringLiteral("lantern"), QStringLiteral("_"), QStringLiteral(":/i18n"))) {
        delete translator;
        return nullptr;
    }
    // Qt's own words (Cancel, Yes, the file dialog), in the same language; English needs none.
    // Installed first: the last translator installed is asked first, so Lantern's texts win.
    if (locale.language() != QLocale::English) installQtTranslation(name, translator);
    QCoreApplication::installTranslator(translator);
    return translator;
}

bool use(const QString& name) {
    // The one set use() installed: Lantern's translator, with Qt's as its child.
    static QPointer<QTranslator> current;
    delete current.data();  // removes it, and Qt's with it
    current = install(name);
    return current != nullptr;
}

QString nativeName(const QString& name) {
    const QLocale locale(name);
    QString native = locale.nativeLanguageName();
    if (locale.language() == QLocale::Chinese && locale.script() != QLocale::TraditionalChineseScript)
        native = QStringLiteral("简体中文");
    return native.isEmpty() ? name : native;
}

}  // namespace language
