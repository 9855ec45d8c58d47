#include "panels/FormValueRow.h"

#include <QFormLayout>
#include <QLabel>

QLabel* addFormValueRow(QFormLayout* form, QWidget* owner, const QString& caption, const char* name) {
    auto* captionLabel = new QLabel(caption, owner);
    captionLabel->setProperty("role", QStringLiteral("caption"));
    auto* value = new QLabel(owner);
    value->setObjectName(QString::fromLatin1(name));
    value->setProperty("role", QStringLiteral("value"));
    value->setWordWrap(true);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(captionLabel, value);
    return value;
}
