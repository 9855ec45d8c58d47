#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QStyleFactory>

#include "Language.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "Theme.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Lantern"));
    QApplication::setOrganizationName(QStringLiteral("Lantern"));
    QApplication::setApplicationVersion(QStringLiteral(LANTERN_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("lantern"));
    language::install(preferences::language());

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
    parser.addOption(model);
    parser.addOption(device);
    parser.addPositionalArgument(
        QStringLiteral("file"),
        QCoreApplication::translate("main", "A GGUF model to load (same as --model)."),
        QStringLiteral("[file]"));
    parser.process(app);

    MainWindow window;
    window.show();

    QString path = parser.value(model);
    if (path.isEmpty() && !parser.positionalArguments().isEmpty())
        path = parser.positionalArguments().constFirst();
    if (path.isEmpty() && QFileInfo::exists(preferences::lastModel())) path = preferences::lastModel();
    if (!path.isEmpty()) window.openModel(QFileInfo(path).absoluteFilePath(), parser.value(device));
    return QApplication::exec();
}
