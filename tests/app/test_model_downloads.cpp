// ModelDownloads against the local Hub server (tests/fixtures/hub_server.py): several downloads
// at once, progress, a pause that keeps the .part and a resume that finishes it, a restart that
// finds the paused download again, a cancel that leaves nothing, a wrong checksum said and cleaned
// up — and never a half-written .gguf in the models folder.
#include <QDir>
#include <QDirIterator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "lantern/error.h"
#include "models/ModelDownloads.h"
#include "test_support.h"

namespace {

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QByteArray shared(const char* name) {
    return readAll(QString::fromStdString(lantern::test::shared_path(std::string("models/") + name)));
}

// The .gguf files under `dir` (a finished model is one; a .part is not).
QStringList ggufFiles(const QString& dir) {
    QStringList out;
    QDirIterator it(dir, {QStringLiteral("*.gguf")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) out << QDir(dir).relativeFilePath(it.next());
    out.sort();
    return out;
}

}  // namespace

class TestModelDownloads : public QObject {
    Q_OBJECT
    std::unique_ptr<lantern::test::HubFixture> hub_;

    lantern::hub::HubOptions options() const {
        lantern::hub::HubOptions o;
        o.endpoint = hub_->endpoint();
        o.read_timeout_s = 10;
        return o;
    }
    lantern::hub::RepoFile fileOf(const std::string& repo, const std::string& path) const {
        lantern::hub::HubClient client(options());
        for (const auto& f : client.gguf_files(repo)) {
            if (f.path == path) return f;
        }
        throw std::runtime_error("no " + path);
    }
    static bool waitState(ModelDownloads& d, int id, ModelDownloads::State state) {
        return QTest::qWaitFor([&] { return d.item(id).state == state; }, 60000);
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

    void severalDownloadsRunAtOnceAndLandWhole() {
        QTemporaryDir models;
        ModelDownloads downloads(models.path());
        downloads.setHubOptions(options());
        QSignalSpy finished(&downloads, &ModelDownloads::finished);
        QSignalSpy changed(&downloads, &ModelDownloads::changed);
        const int a = downloads.start(QStringLiteral("lantern-test/tiny-GGUF"),
                                      fileOf("lantern-test/tiny-GGUF", "tiny-Q8_0.gguf"));
        const int b = downloads.start(QStringLiteral("lantern-test/slow-GGUF"),
                                      fileOf("lantern-test/slow-GGUF", "tiny-F16.gguf"));
        QVERIFY(a != b);
        QCOMPARE(downloads.items().size(), 2);
        // The same file again is the same download.
        QCOMPARE(downloads.start(QStringLiteral("lantern-test/slow-GGUF"),
                                 fileOf("lantern-test/slow-GGUF", "tiny-F16.gguf")),
                 b);
        QVERIFY(waitState(downloads, a, ModelDownloads::State::Done));
        QVERIFY(waitState(downloads, b, ModelDownloads::State::Done));
        QCOMPARE(finished.count(), 2);
        QVERIFY(changed.count() > 2);  // progress on the way
        QCOMPARE(readAll(downloads.item(a).path), shared("stories260K-q8_0.gguf"));
        QCOMPARE(readAll(downloads.item(b).path), shared("stories260K-f16.gguf"));
        QCOMPARE(downloads.item(b).path,
                 models.path() + QStringLiteral("/lantern-test/slow-GGUF/tiny-F16.gguf"));
        QCOMPARE(ggufFiles(models.path()),
                 QStringList({QStringLiteral("lantern-test/slow-GGUF/tiny-F16.gguf"),
                              QStringLiteral("lantern-test/tiny-GGUF/tiny-Q8_0.gguf")}));
        QVERIFY(QDir(models.path() + QStringLiteral("/lantern-test/slow-GGUF"))
                    .entryList({QStringLiteral("*.part*")}, QDir::Files)
                    .isEmpty());
    }

    void aPausedDownloadResumesAlsoAfterARestart() {
        QTemporaryDir models;
        const auto file = fileOf("lantern-test/slow-GGUF", "tiny-F16.gguf");
        {
            ModelDownloads downloads(models.path());
            downloads.setHubOptions(options());
            const int id = downloads.start(QStringLiteral("lantern-test/slow-GGUF"), file);
            QVERIFY(QTest::qWaitFor([&] { return downloads.item(id).done >= 100000; }, 30000));
            downloads.pause(id);
            QVERIFY(waitState(downloads, id, ModelDownloads::State::Paused));
            QVERIFY(ggufFiles(models.path()).isEmpty());  // nothing half-written looks like a model
        }
        // A new session (the app restarted) finds it, and resuming finishes it.
        ModelDownloads again(models.path());
        again.setHubOptions(options());
        QCOMPARE(again.restorePaused(), 1);
        const auto paused = again.items().at(0);
        QCOMPARE(paused.state, ModelDownloads::State::Paused);
        QCOMPARE(paused.repo, QStringLiteral("lantern-test/slow-GGUF"));
        QVERIFY(paused.done >= 100000 && paused.done < file.size);
        again.resume(paused.id);
        QVERIFY(waitState(again, paused.id, ModelDownloads::State::Done));
        QCOMPARE(readAll(again.item(paused.id).path), shared("stories260K-f16.gguf"));
        QCOMPARE(again.restorePaused(), 0);
    }

    void cancelLeavesNothingAndAWrongChecksumIsSaid() {
        QTemporaryDir models;
        ModelDownloads downloads(models.path());
        downloads.setHubOptions(options());
        const int slow = downloads.start(QStringLiteral("lantern-test/slow-GGUF"),
                                         fileOf("lantern-test/slow-GGUF", "tiny-F16.gguf"));
        QVERIFY(QTest::qWaitFor([&] { return downloads.item(slow).done > 0; }, 30000));
        downloads.cancel(slow);
        QVERIFY(waitState(downloads, slow, ModelDownloads::State::Cancelled));
        QSignalSpy failed(&downloads, &ModelDownloads::failed);
        const int bad = downloads.start(QStringLiteral("lantern-test/badsum-GGUF"),
                                        fileOf("lantern-test/badsum-GGUF", "tiny-Q8_0.gguf"));
        QVERIFY(waitState(downloads, bad, ModelDownloads::State::Failed));
        QCOMPARE(failed.count(), 1);
        QVERIFY2(downloads.item(bad).error.contains(QStringLiteral("is not the file the Hub lists")),
                 qPrintable(downloads.item(bad).error));
        QDirIterator left(models.path(), QDir::Files, QDirIterator::Subdirectories);
        QVERIFY2(!left.hasNext(), "a cancelled or refused download leaves no file");
    }
};

QTEST_GUILESS_MAIN(TestModelDownloads)
#include "test_model_downloads.moc"
