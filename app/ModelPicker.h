// ModelPicker — the toolbar's list of models: those in the models folder, those other apps
// downloaded (ModelLibrary), the last model and the loaded one (UI thread).
//
// The folders are scanned on a thread of their own and watched, so a model another app downloads
// shows up while Lantern runs. A model of an architecture the engine does not run is listed,
// disabled, with the reason. Choosing one emits modelChosen.
#pragma once
#include <QComboBox>
#include <QStringList>
#include <QVector>

#include "ModelLibrary.h"

class QFileSystemWatcher;
class QThread;

class ModelPicker : public QComboBox {
    Q_OBJECT
public:
    explicit ModelPicker(QWidget* parent = nullptr);
    ~ModelPicker() override;  // waits for a running scan (it is bounded)

    // The model loaded or loading ("" for none): listed and selected.
    void setCurrentModel(const QString& path);
    // Scans the models folders again on a thread; the list is filled when it ends.
    void rescan();
    // What to call the model file at `path`: its file name, or the name the app that downloaded
    // it gives it where the file name is only a digest (Ollama).
    QString modelName(const QString& path, bool withExtension = true) const;

signals:
    void modelChosen(const QString& path);
    void modelListChanged();  // filled from a finished scan (tests wait on it)

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: the tooltip and the entries

private:
    void retranslateUi();
    void fill();
    void watchFolders(const QStringList& folders);

    QString current_;
    QFileSystemWatcher* watcher_ = nullptr;
    QThread* scan_ = nullptr;
    QVector<model_library::Model> scanned_;  // the last scan's models
    bool scanned_once_ = false;
    bool rescanWanted_ = false;  // the folders changed during a scan
};
