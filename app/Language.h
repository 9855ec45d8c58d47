// Interface language: Lantern's translations are compiled into the binary (translations/*.ts →
// .qm, embedded under :/i18n) and one is installed at start-up, chosen by the View > Language
// setting or, when that is "automatic", by the system locale. Qt's own translation of what it
// draws itself (the standard dialog buttons, the file dialog, a text field's context menu) is
// installed with it from Qt's translations folder (Debian: qt6-translations-l10n).
//
// View > Language switches at run time (use()): the translators installed before are removed and
// the new ones installed, so Qt sends QEvent::LanguageChange to every widget; each widget that
// words its texts once sets them again in its retranslateUi(), called from its changeEvent.
#pragma once
#include <QLocale>
#include <QString>
#include <QStringList>

class QTranslator;

namespace language {

// Locale names with a full translation, besides English (the source language).
QStringList available();
// Loads and installs the translation for `name` ("" = the system locale), and Qt's own for it
// where Qt has one. Returns Lantern's translator (owned by the application; deleting it removes
// Qt's too) or nullptr when no translation applies.
QTranslator* install(const QString& name);
// The application's language from now on (""/automatic = the system locale): removes the
// translators use() installed before — Lantern's and Qt's — and installs those for `name`. This
// module owns them: switching any number of times leaves one set installed. Returns false when
// no translation applies (English without its plural forms), which leaves the source texts.
bool use(const QString& name);
// Qt's own translation for `name` installed alone, as a child of `parent`, or nullptr when Qt's
// translations folder has none for it.
QTranslator* installQtTranslation(const QString& name, QObject* parent);
// The native name of a language, for the menu ("简体中文").
QString nativeName(const QString& name);

}  // namespace language
