// The Get Models dialog against the local Hub server (tests/fixtures/hub_server.py): a search, a
// repository's files with whether Lantern runs each and whether it fits the device (said before
// downloading), a download with its progress, a pause and a resume, and an unsupported model that
// cannot be downloaded at all.
#include <QApplication>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "lantern/error.h"
#include "models/ModelDownloads.h"
#include "models/ModelsDialog.h"
#include "test_support.h"

class TestModelsDialog : public QObject {
    Q_OBJECT
    std::unique_ptr<lantern::test::HubFixture> hub_;

    struct Window {
        QTemporaryDir models;
        std::unique_ptr<ModelDownloads> downloads;
        std::unique_ptr<ModelsDialog> dialog;
    };
    std::unique_ptr<Window> open(uint64_t deviceBytes = 1ull << 30) {
        auto w = std::make_unique<Window>();
        w->downloads = std::make_unique<ModelDownloads>(w->models.path());
        lantern::DeviceInfo device;
        device.device_local_bytes = deviceBytes;
        device.max_storage_buffer_range = 1ull << 30;
        device.max_allocation_bytes = 1ull << 30;
        w->dialog = std::make_unique<ModelsDialog>(w->downloads.get(), device, 4096);
        w->dialog->findChild<QLineEdit*>(QStringLiteral("hubEndpoint"))
            ->setText(QString::fromStdString(hub_->endpoint()));
        return w;
    }
    static int rowOf(QTableWidget* table, const QString& file) {
        for (int r = 0; r < table->rowCount(); ++r) {
            if (table->item(r, 0)->text().startsWith(file)) return r;
        }
        return -1;
    }
    // Opens `repo` and waits until its files are listed and probed.
    static QTableWidget* openRepository(Window& w, const QString& repo) {
        QSignalSpy probed(w.dialog.get(), &ModelsDialog::filesProbed);
        w.dialog->openRepository(repo);
        if (!probed.wait(30000)) return nullptr;
        return w.dialog->findChild<QTableWidget*>(QStringLiteral("hubFiles"));
    }

private slots:
    void initTestCase() {
        try {
            hub_ = std::make_unique<lantern::test::HubFixture>();
        } catch (const lantern::Error& e) {
            QFAIL(e.what());
        }
    }
    void cleanupTestCase() { hub_.reset(); }

    void recommendedModelsAreListedFirst() {
        auto w = open();
        auto* results = w->dialog->findChild<QListWidget*>(QStringLiteral("hubResults"));
        QCOMPARE(results->count(), ModelsDialog::recommendedRepositories().size());
        QVERIFY(results->item(0)->text().contains(QStringLiteral("recommended")));
    }

    void searchShowsFilesThatRunAndFitThenDownloadsOne() {
        auto w = open();
        auto* results = w->dialog->findChild<QListWidget*>(QStringLiteral("hubResults"));
        w->dialog->search(QStringLiteral("tiny"));
        QVERIFY(QTest::qWaitFor(
            [&] {
                return results->count() == 1 &&
                       !results->item(0)->text().contains(QStringLiteral("recommended"));
            },
            20000));
        QCOMPARE(results->item(0)->data(Qt::UserRole).toString(), QStringLiteral("lantern-test/tiny-GGUF"));
        QTableWidget* files = openRepository(*w, QStringLiteral("lantern-test/tiny-GGUF"));
        QVERIFY(files);
        QCOMPARE(files->rowCount(), 3);  // the split F32 model is one row
        QVERIFY(w->dialog->findChild<QLabel*>(QStringLiteral("hubRepo"))
                    ->text()
                    .contains(QStringLiteral("licence: mit")));
        const int q8 = rowOf(files, QStringLiteral("tiny-Q8_0.gguf"));
        QVERIFY(q8 >= 0);
        QCOMPARE(files->item(q8, 1)->text(), QStringLiteral("Q8_0"));
        QCOMPARE(files->item(q8, 3)->text(), QStringLiteral("yes (llama)"));
        QVERIFY2(files->item(q8, 4)->text().startsWith(QStringLiteral("fits (")),
                 qPrintable(files->item(q8, 4)->text()));
        QVERIFY(files->item(rowOf(files, QStringLiteral("F32/tiny-F32-00001-of-00002.gguf")), 0)
                    ->text()
                    .contains(QStringLiteral("2 parts")));
        // Download it: progress, then done, and the file is where the model picker looks.
        auto* download = w->dialog->findChild<QPushButton*>(QStringLiteral("hubDownload"));
        QVERIFY(!download->isEnabled());
        files->selectRow(q8);
        QVERIFY(download->isEnabled());
        QSignalSpy finished(w->downloads.get(), &ModelDownloads::finished);
        download->click();
        QVERIFY(finished.wait(30000));
        auto* table = w->dialog->findChild<QTableWidget*>(QStringLiteral("hubDownloads"));
        QCOMPARE(table->rowCount(), 1);
        QVERIFY(QTest::qWaitFor(
            [&] { return table->item(0, 2)->text() == QStringLiteral("done: in the model picker"); }, 5000));
        QCOMPARE(qobject_cast<QProgressBar*>(table->cellWidget(0, 1))->value(), 1000);
        QVERIFY(
            QFileInfo::exists(w->models.path() + QStringLiteral("/lantern-test/tiny-GGUF/tiny-Q8_0.gguf")));
    }

    void aTightDeviceAndAnUnsupportedModelAreSaidBeforeDownloading() {
        auto tight = open(100 * 1024);
        QTableWidget* files = openRepository(*tight, QStringLiteral("lantern-test/tiny-GGUF"));
        QVERIFY(files);
        const QString fit = files->item(rowOf(files, QStringLiteral("tiny-F16.gguf")), 4)->text();
        QVERIFY2(fit.startsWith(QStringLiteral("too big: needs")), qPrintable(fit));
        auto w = open();
        QTableWidget* bert = openRepository(*w, QStringLiteral("lantern-test/bert-GGUF"));
        QVERIFY(bert);
        QCOMPARE(bert->item(0, 3)->text(), QStringLiteral("no: a bert model"));
        bert->selectRow(0);
        QVERIFY(!w->dialog->findChild<QPushButton*>(QStringLiteral("hubDownload"))->isEnabled());
    }

    // A gated repository asks for a token; one typed into the dialog opens it, and it is kept in
    // the keyring or for this session only — never in the settings file.
    void aTokenTypedInTheDialogOpensAGatedRepository() {
        auto w = open();
        auto* label = w->dialog->findChild<QLabel*>(QStringLiteral("hubRepo"));
        w->dialog->openRepository(QStringLiteral("lantern-test/gated-GGUF"));
        QVERIFY(
            QTest::qWaitFor([&] { return label->text().contains(QStringLiteral("access token")); }, 20000));
        w->dialog->setToken(QStringLiteral("hf_good_token"));
        auto* note = w->dialog->findChild<QLabel*>(QStringLiteral("hubTokenNote"));
        QVERIFY(QTest::qWaitFor(
            [&] {
                return note->text().startsWith(QStringLiteral("Kept in your keyring")) ||
                       note->text().contains(QStringLiteral("this session only"));
            },
            30000));
        QTableWidget* files = openRepository(*w, QStringLiteral("lantern-test/gated-GGUF"));
        QVERIFY(files);
        QCOMPARE(files->rowCount(), 1);
        QCOMPARE(files->item(0, 3)->text(), QStringLiteral("yes (llama)"));
        QSettings settings;
        for (const QString& key : settings.allKeys())
            QVERIFY2(!settings.value(key).toString().contains(QStringLiteral("hf_good_token")),
                     qPrintable(key));
    }

    void aDownloadPausesAndResumesFromTheDialog() {
        auto w = open();
        QTableWidget* files = openRepository(*w, QStringLiteral("lantern-test/slow-GGUF"));
        QVERIFY(files);
        files->selectRow(0);
        w->dialog->findChild<QPushButton*>(QStringLiteral("hubDownload"))->click();
        auto* table = w->dialog->findChild<QTableWidget*>(QStringLiteral("hubDownloads"));
        QVERIFY(QTest::qWaitFor(
            [&] { return table->rowCount() == 1 && w->downloads->items().at(0).done > 50000; }, 30000));
        auto* pause = qobject_cast<QPushButton*>(table->cellWidget(0, 3));
        QCOMPARE(pause->text(), QStringLiteral("Pause"));
        QVERIFY2(table->item(0, 2)->text().contains(QStringLiteral("/s,")),
                 qPrintable(table->item(0, 2)->text()));  // speed, time left
        pause->click();
        QVERIFY(QTest::qWaitFor(
            [&] { return table->item(0, 2)->text().startsWith(QStringLiteral("paused at")); }, 10000));
        QCOMPARE(pause->text(), QStringLiteral("Resume"));
        QSignalSpy finished(w->downloads.get(), &ModelDownloads::finished);
        pause->click();
        QVERIFY(finished.wait(30000));
        QVERIFY(
            QFileInfo::exists(w->models.path() + QStringLiteral("/lantern-test/slow-GGUF/tiny-F16.gguf")));
    }

    // Another models folder: later downloads go there (the window then lists it in the picker).
    void downloadsGoToTheModelsFolderChosen() {
        auto w = open();
        QTemporaryDir elsewhere;
        QSignalSpy changedFolder(w->dialog.get(), &ModelsDialog::modelsFolderChanged);
        w->dialog->setModelsFolder(elsewhere.path());
        QCOMPARE(changedFolder.count(), 1);
        QCOMPARE(w->dialog->findChild<QLabel*>(QStringLiteral("modelsFolder"))->text(), elsewhere.path());
        QTableWidget* files = openRepository(*w, QStringLiteral("lantern-test/tiny-GGUF"));
        QVERIFY(files);
        files->selectRow(rowOf(files, QStringLiteral("tiny-F16.gguf")));
        QSignalSpy finished(w->downloads.get(), &ModelDownloads::finished);
        w->dialog->findChild<QPushButton*>(QStringLiteral("hubDownload"))->click();
        QVERIFY(finished.wait(30000));
        QVERIFY(
            QFileInfo::exists(elsewhere.path() + QStringLiteral("/lantern-test/tiny-GGUF/tiny-F16.gguf")));
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("LanternTest"));
    QApplication::setApplicationName(QStringLiteral("test_models_dialog"));
    QStandardPaths::setTestModeEnabled(true);
    TestModelsDialog t;
    return QTest::qExec(&t, argc, argv);
}
#include "test_models_dialog.moc"
