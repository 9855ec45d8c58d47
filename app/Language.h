// Interface language: Lantern's translations are compiled into the binary (translations/*.ts →
// .qm, embedded under :/i18n) and one is installed at start-up, chosen by the View > Language
// setting or, when that is "automatic", by the system locale.
#pragma once
#include <QLocale>
#include <QString>
#include <QStringList>

class QTranslator;

namespace language {

// Locale names with a full translation, besides English (the source language).
QStringList available();
// Loads and installs the translation for `name` ("" = the system locale). Returns the installed
// translator (owned by the application) or nullptr when no translation applies.
QTranslator* install(const QString& name);
// The native name of a language, for the menu ("简体中文").
QString nativeName(const QString& name);

}  // namespace language
