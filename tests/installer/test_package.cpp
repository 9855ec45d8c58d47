// The Linux installer: CPack builds the .deb from this build tree, and what it holds is what a user
// gets from `apt install ./lantern_<version>_amd64.deb` — a package apt can resolve, the four
// programs stripped, desktop integration that freedesktop's own validators accept, and programs
// that run from where they are installed, with nothing from the source or build tree.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "test_support.h"

namespace {

struct Run {
    int exit_code = -1;
    QByteArray out, err;
    QString failure;  // why it did not run at all (not installed, timed out), else empty
};

Run run(const QString& program, const QStringList& args, const QString& cwd = {},
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(), int timeout_ms = 300000) {
    QProcess p;
    p.setProcessEnvironment(env);
    if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
    p.start(program, args);
    Run r;
    if (!p.waitForStarted(30000)) {
        r.failure = program + " did not start (is it installed? scripts/setup-deps installs it)";
        return r;
    }
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
        r.failure = program + " did not finish in time";
    }
    r.exit_code = p.exitCode();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

QString describe(const QString& what, const Run& r) {
    return what + ": " + (r.failure.isEmpty() ? QStringLiteral("exit %1").arg(r.exit_code) : r.failure) +
           "\n" + QString::fromUtf8(r.out) + QString::fromUtf8(r.err);
}

#define VERIFY_RAN(what, r) \
    QVERIFY2((r).failure.isEmpty() && (r).exit_code == 0, qPrintable(describe(what, r)))

}  // namespace

class TestPackage : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void theDebIsNamedAndDescribedForApt();
    void itInstallsTheProgramsStripped();
    void itsDesktopIntegrationValidates();
    void theInstalledCliWritesTheReferenceText();
    void theInstalledAppStarts();

private:
    QTemporaryDir work_;
    QString deb_, root_;  // the package, and where it was unpacked
};

void TestPackage::initTestCase() {
    QVERIFY(work_.isValid());
    const Run cpack =
        run(QStringLiteral(LANTERN_CPACK_COMMAND),
            {"--config", QStringLiteral(LANTERN_CPACK_CONFIG), "-G", "DEB", "-B", work_.path()});
    VERIFY_RAN("cpack", cpack);
    deb_ = work_.filePath(QStringLiteral("lantern_" LANTERN_PACKAGE_VERSION "_amd64.deb"));
    QVERIFY2(QFile::exists(deb_), qPrintable("no " + deb_ + " after cpack; it wrote: " +
                                             QDir(work_.path()).entryList(QDir::Files).join(' ')));
    root_ = work_.filePath(QStringLiteral("root"));
    VERIFY_RAN("dpkg-deb -x", run("dpkg-deb", {"-x", deb_, root_}));
}

// apt resolves the package from its control fields: the libraries dpkg-shlibdeps found, a Vulkan
// driver, and Qt's SQLite driver, a plugin nothing links (without it no conversation is saved).
void TestPackage::theDebIsNamedAndDescribedForApt() {
    const auto field = [this](const char* name) {
        const Run r = run("dpkg-deb", {"--field", deb_, QString::fromLatin1(name)});
        return r.exit_code == 0 ? QString::fromUtf8(r.out).trimmed()
                                : "(dpkg-deb failed: " + describe(name, r) + ")";
    };
    QCOMPARE(field("Package"), QStringLiteral("lantern"));
    QCOMPARE(field("Version"), QStringLiteral(LANTERN_PACKAGE_VERSION));
    QCOMPARE(field("Architecture"), QStringLiteral("amd64"));
    const QString depends = field("Depends");
    for (const char* need : {"mesa-vulkan-drivers | vulkan-icd", "libqt6sql6-sqlite", "libvulkan1",
                             "libsentencepiece0", "libqt6widgets6", "libqt6charts6"})
        QVERIFY2(depends.contains(QLatin1String(need)),
                 qPrintable(QStringLiteral("Depends lacks %1: %2").arg(need, depends)));
    QCOMPARE(field("Recommends"), QStringLiteral("qt6-translations-l10n"));  // Qt's own words in Chinese
    QVERIFY2(field("Description").contains(QLatin1String("lantern-server")),
             qPrintable(field("Description")));
}

// The programs, each stripped of the debug info the RelWithDebInfo build keeps for profiling.
void TestPackage::itInstallsTheProgramsStripped() {
    for (const char* name : {"lantern", "lantern-cli", "lantern-server", "lantern-bench"}) {
        const QString path = root_ + "/usr/bin/" + QLatin1String(name);
        QVERIFY2(QFileInfo(path).isExecutable(), qPrintable(path + " is not in the package"));
        const Run sections = run("readelf", {"--sections", "--wide", path});
        VERIFY_RAN("readelf", sections);
        QVERIFY2(!sections.out.contains(".debug_info"), qPrintable(path + " still carries .debug_info"));
    }
}

// The launcher entry, the AppStream metadata and the GGUF file type, each checked by the
// freedesktop.org tool that reads it.
void TestPackage::itsDesktopIntegrationValidates() {
    const QString share = root_ + "/usr/share";
    const QString desktop = share + "/applications/lantern.desktop";
    const Run d = run("desktop-file-validate", {desktop});
    VERIFY_RAN("desktop-file-validate", d);
    QVERIFY2(d.out.isEmpty() && d.err.isEmpty(),
             qPrintable(describe("desktop-file-validate has remarks", d)));
    QFile entry(desktop);
    QVERIFY(entry.open(QIODevice::ReadOnly));
    const QByteArray text = entry.readAll();
    QVERIFY(text.contains("\nExec=lantern %f\n"));
    QVERIFY(text.contains("\nMimeType=application/x-gguf;\n"));
    QVERIFY(QFile::exists(share + "/icons/hicolor/scalable/apps/lantern.svg"));

    VERIFY_RAN("appstreamcli validate",
               run("appstreamcli",
                   {"validate", "--no-net", share + "/metainfo/io.github.lantern.Lantern.metainfo.xml"}));

    // The MIME package compiles, and the compiled database maps *.gguf and the "GGUF" magic to the
    // type the launcher entry opens.
    const QString mime = work_.filePath(QStringLiteral("mime"));
    QVERIFY(QDir().mkpath(mime + "/packages"));
    QVERIFY(QFile::copy(share + "/mime/packages/lantern.xml", mime + "/packages/lantern.xml"));
    VERIFY_RAN("update-mime-database", run("update-mime-database", {mime}));
    QFile globs(mime + "/globs2");
    QVERIFY(globs.open(QIODevice::ReadOnly));
    QVERIFY2(globs.readAll().contains("application/x-gguf:*.gguf"),
             "globs2 maps *.gguf to application/x-gguf");
    QFile magic(mime + "/magic");
    QVERIFY(magic.open(QIODevice::ReadOnly));
    const QByteArray m = magic.readAll();
    QVERIFY2(m.contains("application/x-gguf") && m.contains("GGUF"), "the magic file knows the GGUF header");
}

// Run from an empty directory with the package's own lantern-cli (its kernels are compiled in, so
// nothing is looked up beside the source or build tree), greedy decoding writes the float64
// reference's text, with Vulkan validation on (LANTERN_VALIDATION=1 from CTest) and silent.
void TestPackage::theInstalledCliWritesTheReferenceText() {
    const QString model = QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf"));
    const QString reference = lantern::test::stories_reference()["greedy_from_bos_text"].toString();
    QVERIFY(reference.startsWith(QLatin1String("Once upon a time")));
    const QString empty = work_.filePath(QStringLiteral("cwd"));
    QVERIFY(QDir().mkpath(empty));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CACHE_HOME",
               work_.filePath(QStringLiteral("cache")));  // a cold pipeline cache of its own
    const Run cli =
        run(root_ + "/usr/bin/lantern-cli",
            {"--model", model, "--prompt", "Once upon a time", "-n", "24", "--temp", "0"}, empty, env);
    VERIFY_RAN("installed lantern-cli", cli);
    const QString text = QString::fromUtf8(cli.out).chopped(cli.out.endsWith('\n') ? 1 : 0);
    QVERIFY2(text.size() > 40, qPrintable(text));
    QVERIFY2(reference.startsWith("Once upon a time" + text),
             qPrintable("wrote: " + text + "\nreference: " + reference));
    QVERIFY2(!cli.err.contains("vulkan:"), qPrintable(describe("validation messages", cli)));
}

// The installed app links and starts with the Qt it depends on (offscreen here: no display in CI).
void TestPackage::theInstalledAppStarts() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CONFIG_HOME", work_.filePath(QStringLiteral("config")));
    env.insert("QT_QPA_PLATFORM", "offscreen");
    const Run app = run(root_ + "/usr/bin/lantern", {"--version"}, {}, env, 60000);
    VERIFY_RAN("installed lantern --version", app);
    QCOMPARE(QString::fromUtf8(app.out).trimmed(), QStringLiteral("Lantern " LANTERN_PACKAGE_VERSION));
}

QTEST_GUILESS_MAIN(TestPackage)
#include "test_package.moc"
