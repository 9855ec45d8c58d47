// ModelsDialog — File > Get Models…: GGUF chat models from the Hugging Face Hub (or the mirror the
// Hub address names): a short list of recommended ones or a search, a repository's files with
// their quantisation and size, whether Lantern runs each (its header, read before downloading) and
// whether it fits this device at the context asked for (lantern::plan_memory), its licence, and the
// downloads in progress with speed and time left (pause, resume, cancel). It lays out and wires:
// lantern::hub asks the Hub (off the UI thread) and ModelDownloads downloads.
#pragma once
#include <QDialog>
#include <QHash>
#include <vector>

#include "Retranslate.h"
#include "lantern/device.h"
#include "lantern/hub.h"

class HubToken;
class ModelDownloads;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QTableWidget;

class ModelsDialog : public QDialog {
    Q_OBJECT
public:
    // `device`: where models would run (the fit column); `context`: the context length asked of them.
    ModelsDialog(ModelDownloads* downloads, const lantern::DeviceInfo& device, uint32_t context,
                 QWidget* parent = nullptr);

    // Repositories of chat models Lantern runs, listed before any search.
    static QStringList recommendedRepositories();

    void search(const QString& query);
    // The access token for gated repositories, as if typed into its field and confirmed.
    void setToken(const QString& token);
    // Downloads go into `folder` from now on (its Change… button asks for one).
    void setModelsFolder(const QString& folder);
    void openRepository(const QString& repo);

signals:
    void modelsFolderChanged(const QString& folder);
    void repositoryListed(const QString& repo);  // its files are shown (tests wait on it)
    void filesProbed(const QString& repo);       // every file's support and fit are shown

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    void showFiles(const QString& repo, const std::vector<lantern::hub::RepoFile>& files);
    void probeFiles(const QString& repo);
    void downloadSelected();
    void refreshDownload(int id);
    static QString recommended(const QString& repo);  // its entry in the results
    void showError(const QString& message);
    lantern::hub::HubOptions hubOptions() const;

    ModelDownloads* downloads_;
    lantern::DeviceInfo device_;
    uint32_t context_;
    QLineEdit* endpoint_;
    QLineEdit* tokenField_;
    QLabel* tokenNote_;
    QLabel* folder_;
    HubToken* token_;
    QLineEdit* query_;
    QListWidget* results_;
    QLabel* repoLabel_;
    QTableWidget* files_;
    QPushButton* download_;
    QTableWidget* downloadsTable_;
    QLabel* status_;
    QString repo_;
    std::vector<lantern::hub::RepoFile> repoFiles_;
    QHash<int, int> rowOfDownload_;
    Retranslate texts_;
};
