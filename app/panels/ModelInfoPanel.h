// ModelInfoPanel — what was loaded and where it runs: architecture, dimensions, layers, heads,
// context, vocabulary, weight types, parameter count, device and load timings.
#pragma once
#include <QHash>
#include <QWidget>

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
    QString valueText(const QString& name) const;

private:
    void addRow(QFormLayout* form, const QString& caption, const char* name);
    void set(const char* name, const QString& text);
    QHash<QString, QLabel*> values_;
};
