#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QStyleFactory>

#include "KeyringSecret.h"
#include "Language.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "Theme.h"
#include "remote/RemoteEndpointStore.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Lantern"));
    QApplication::setOrganizationName(QStringLiteral("Lantern"));
    QApplication::setApplicationVersion(QStringLiteral(LANTERN_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("lantern"));
    language::use(preferences::language());

    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette palette = QApplication::palette();
    palette.setColor(QPalette::Window, QColor(0xF7, 0xF8, 0xFA));
    palette.setColor(QPalette::Highlight, theme::accent());
    palette.setColor(QPalette::HighlightedText, Qt::white);
    palette.setColor(QPalette::Link, theme::accentDark());
    QApplication::setPalette(palette);
    app.setStyleSheet(theme::styleSheet());
    QApplication::setWindowIcon(theme::appIcon());

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QCoreApplication::translate("main", "Chat with Llama models locally and see inside the engine."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption model(
        QStringList{QStringLiteral("model"), QStringLiteral("m")},
        QCoreApplication::translate("main", "Load the GGUF model in <file> at start."),
        QCoreApplication::translate("main", "file"));
    const QCommandLineOption device(
        QStringList{QStringLiteral("device"), QStringLiteral("d")},
        QCoreApplication::translate("main",
                                    "Run on the Vulkan device <selector>: an index or part of its name."),
        QCoreApplication::translate("main", "selector"));
    const QCommandLineOption remote(
        QStringLiteral("remote"),
        QCoreApplication::translate(
            "main",
            "Chat on the OpenAI-compatible server at <url> (e.g. http://gpu-box:8000/v1) "
            "instead of loading a local model. API key: LANTERN_API_KEY, else the keyring "
            "entry of an endpoint saved with that URL."),
        QCoreApplication::translate("main", "url"));
    const QCommandLineOption remoteModel(
        QStringLiteral("remote-model"),
        QCoreApplication::translate("main",
                                    "With --remote: the model to ask for (default: the first it lists)."),
        QCoreApplication::translate("main", "name"));
    parser.addOption(model);
    parser.addOption(device);
    parser.addOption(remote);
    parser.addOption(remoteModel);
    parser.addPositionalArgument(
        QStringLiteral("file"),
        QCoreApplication::translate("main", "A GGUF model to load (same as --model)."),
        QStringLiteral("[file]"));
    parser.process(app);

    MainWindow window;
    window.show();

    if (parser.isSet(remote)) {
        RemoteEndpoint endpoint{.name = remote::hostLabel(parser.value(remote)),
                                .baseUrl = parser.value(remote),
                                .model = parser.value(remoteModel),
                                .apiKey = {}};
        const QList<RemoteEndpoint> saved = remote_endpoints::load();
        const int index = remote_endpoints::indexOfUrl(saved, endpoint.baseUrl);
        if (index >= 0) endpoint.name = saved[index].name;
        // The key: LANTERN_API_KEY, else the saved endpoint's in the keyring (read asynchronously).
        auto* key = new KeyringSecret(index >= 0 ? remote_endpoints::keyringKey(endpoint.name) : QString(),
                                      {QStringLiteral("LANTERN_API_KEY")}, &window);
        QObject::connect(key, &KeyringSecret::loaded, &window, [&window, key, endpoint]() mutable {
            endpoint.apiKey = key->secret();
            key->deleteLater();
            window.openRemote(endpoint);
        });
        if (index >= 0 || qEnvironmentVariableIsSet("LANTERN_API_KEY")) {
            key->load();
        } else {
            key->deleteLater();
            window.openRemote(endpoint);
        }
        return QApplication::exec();
    }

    QString path = parser.value(model);
    if (path.isEmpty() && !parser.positionalArguments().isEmpty())
        path = parser.positionalArguments().constFirst();
    if (path.isEmpty() && QFileInfo::exists(preferences::lastModel())) path = preferences::lastModel();
    if (!path.isEmpty()) window.openModel(QFileInfo(path).absoluteFilePath(), parser.value(device));
    return QApplication::exec();
}
