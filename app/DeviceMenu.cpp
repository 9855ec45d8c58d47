#include "DeviceMenu.h"

#include <QActionGroup>
#include <QEvent>

DeviceMenu::DeviceMenu(QWidget* parent) : QMenu(parent), group_(new QActionGroup(this)) {
    setTitle(tr("&Device"));
}

void DeviceMenu::changeEvent(QEvent* event) {
    QMenu::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    setTitle(tr("&Device"));
    setDevices(devices_);  // "Automatic" and the devices' descriptions
}

void DeviceMenu::setDevices(const DeviceList& devices) {
    devices_ = devices;
    clear();
    for (QAction* a : group_->actions()) group_->removeAction(a);
    auto add = [this](const QString& label, const QString& selector) {
        QAction* a = addAction(label);
        a->setCheckable(true);
        a->setData(selector);
        a->setChecked(selector == selector_);
        group_->addAction(a);
        connect(a, &QAction::triggered, this, [this, selector] { emit chosen(selector); });
    };
    add(tr("Automatic (best available)"), QString());
    addSeparator();
    for (const lantern::DeviceInfo& d : devices) add(deviceDescription(d), QString::number(d.index));
}

void DeviceMenu::setSelector(const QString& selector) {
    selector_ = selector;
    for (QAction* a : group_->actions()) a->setChecked(a->data().toString() == selector);
}

QString DeviceMenu::nameOf(const QString& selector) const {
    if (selector.isEmpty()) return tr("the automatically chosen device");
    for (QAction* a : group_->actions())
        if (a->data().toString() == selector) return a->text();
    return selector;
}
