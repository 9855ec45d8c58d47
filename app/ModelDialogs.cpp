#include "ModelDialogs.h"

#include <QCoreApplication>
#include <QDir>
#include <QMessageBox>

#include "ContextLengthDialog.h"
#include "Preferences.h"
#include "worker/InferenceWorker.h"

namespace model_dialogs {

void explainRollback(QWidget* parent, ModelSession::Change change, const QString& path,
                     const QString& askedName, const QString& message) {
    const QString where = QDir::toNativeSeparators(path);
    const bool length = change == ModelSession::Change::ContextLength;
    QMessageBox box(
        QMessageBox::Warning,
        length ? QCoreApplication::translate("ModelDialogs", "Could not change the context length")
               : QCoreApplication::translate("ModelDialogs", "Could not change the device"),
        length ? QCoreApplication::translate(
                     "ModelDialogs",
                     "Lantern could not load %1 with a context of %2 tokens; it is loaded again as before.")
                     .arg(where, askedName)
               : QCoreApplication::translate(
                     "ModelDialogs",
                     "Lantern could not load %1 on %2; it is loaded again on the device it ran on.")
                     .arg(where, askedName),
        QMessageBox::Ok, parent);
    box.setInformativeText(message);
    box.exec();
}

void explainLoadFailure(QWidget* parent, const QString& path, const QString& message) {
    QMessageBox box(QMessageBox::Critical,
                    QCoreApplication::translate("ModelDialogs", "Could not load the model"),
                    QCoreApplication::translate("ModelDialogs", "Lantern could not load %1.")
                        .arg(QDir::toNativeSeparators(path)),
                    QMessageBox::Ok, parent);
    box.setInformativeText(message);
    box.exec();
}

std::optional<uint32_t> chooseContextLength(QWidget* parent, const ModelSession& session, bool apiServer,
                                            uint32_t cachedTokens) {
    ContextLengthDialog dialog(session.model(), session.device(), preferences::contextLength(session.path()),
                               InferenceWorker::kvConversationsFor(apiServer), cachedTokens, parent);
    if (dialog.exec() != QDialog::Accepted) return std::nullopt;
    return dialog.chosenLength();
}

}  // namespace model_dialogs
