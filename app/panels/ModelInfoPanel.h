// ModelInfoPanel — what was loaded and where it runs: architecture, dimensions, layers, heads,
// context, vocabulary, weight types, parameter count, device and load timings, and which renderer
// writes the chat prompts (the model's own template or a built-in format), with its text.
#pragma once
#include <QHash>
#include <QWidget>
#include <functional>

#include "Retranslate.h"
#include "remote/RemoteEndpoint.h"
#include "worker/EngineTypes.h"

class QFormLayout;
class QLabel;

class ModelInfoPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelInfoPanel(QWidget* parent = nullptr);
    void setModel(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                  const LoadReport& report);
    void clear();
    // The chat runs on a remote server: its address, kind, model and context as it says them.
    void setRemote(const RemoteReport& report);
    QString valueText(const QString& name) const;
    // Opens the chat template's dialog (its text and which renderer writes the prompts).
    void showTemplate();

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();          // the texts worded once, in the language now installed
    std::function<void()> shown_;  // shows the model again (its facts are worded), or null
    void addRow(QFormLayout* form, const char* caption, const char* name);  // caption: QT_TR_NOOP
    void set(const char* name, const QString& text);
    QHash<QString, QLabel*> values_;
    LoadReport report_;
    Retranslate texts_;
};
