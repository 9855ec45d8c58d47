#include <QApplication>

#include "MainWindow.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("Lantern");
    QApplication::setOrganizationName("Lantern");
    MainWindow window;
    window.show();
    return QApplication::exec();
}
