// A panel's "caption: value" row in a QFormLayout: the caption styled as one, the value a
// selectable, word-wrapped label named `name` (its objectName, for tests), which the panel keeps
// to set later. UI thread.
#pragma once
class QFormLayout;
class QLabel;
class QString;
class QWidget;

QLabel* addFormValueRow(QFormLayout* form, QWidget* owner, const QString& caption, const char* name);
