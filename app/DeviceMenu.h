// DeviceMenu — File > Device: "Automatic (best available)" and every Vulkan device the worker
// listed, the chosen one checked (UI thread). Choosing one emits chosen(selector).
#pragma once
#include <QMenu>

#include "worker/EngineTypes.h"

class QActionGroup;

class DeviceMenu : public QMenu {
    Q_OBJECT
public:
    explicit DeviceMenu(QWidget* parent = nullptr);

    void setDevices(const DeviceList& devices);
    void setSelector(const QString& selector);  // checks its entry ("" = automatic)
    // The entry's text for `selector`; a selector it does not list (a device gone since), as given.
    QString nameOf(const QString& selector) const;

signals:
    void chosen(const QString& selector);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: the title and the entries

private:
    QActionGroup* group_;
    DeviceList devices_;  // as listed
    QString selector_;
};
