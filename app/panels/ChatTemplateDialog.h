// ChatTemplateDialog — the model's chat template as the model info panel offers it: which renderer
// writes the prompts (the model's own Jinja template, or a built-in family and why), and the
// template's text, read-only, to read or copy.
#pragma once
#include <QDialog>

#include "Retranslate.h"
#include "worker/EngineTypes.h"

class ChatTemplateDialog : public QDialog {
    Q_OBJECT
public:
    ChatTemplateDialog(const LoadReport& report, QWidget* parent = nullptr);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();
    Retranslate texts_;
};
